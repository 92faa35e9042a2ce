"""A small end-to-end encrypting Matrix client for the tests, on matrix-nio.

A test runs it as a child with the interpreter of the environment
`.ci/install-synapse` makes. Each subcommand does one thing as a person in
a chat client would, and prints what happened as JSON lines on stdout;
what goes wrong is said on stderr, with a non-zero exit.

    register  makes a user through Synapse's shared-secret admin API
    dm        opens a direct chat with --to, sends --text, prints the replies
    room      makes a named group room, invites --to, sends --text
              mentioning it, prints the replies
    script    opens a direct chat with --to (or, with --room, goes to that
              room), and holds a conversation there: the --steps given,
              in order
    create    makes a named group room (--name), invites --to, and prints
              {"kind": "created", "room": ...} without waiting for it
    pingpong  opens a direct chat with --to and sends --count messages
              ("ping N"), each once --to answered the one before with a
              message ending in it, then prints {"kind": "round_trips",
              "ms": [...]}: each message's time from its send to its answer

dm, room and script log in, and wait for --to to join the room they make
(if --to declines the invitation, leaving the room instead, they say so on
stderr at once, `matrix_client: <to> declined the invitation`, and exit 2).
dm and room print first the message sent:

    {"kind": "sent", "room": ..., "event_id": ..., "body": ...,
     "in_reply_to": null}

then each message --to sends into the room, until --replies of them came
or --wait-reply seconds passed:

    {"kind": "reply", "room": ..., "sender": ..., "body": ...,
     "formatted_body": ..., "msgtype": ..., "decrypted": ...,
     "event_id": ..., "in_reply_to": ..., "replaces": ...}

script's --steps is a JSON list of steps, each an object of one of:

    {"say": TEXT}             sends TEXT, printed as a "sent" line; "{token}"
                              in TEXT is the approval token (the first
                              "(TOKEN)") of the message awaited last
    {"await": TEXT, "wait": SECONDS}
                              waits (--wait-reply seconds unless "wait"
                              says) for a message of --to's, after the one
                              awaited last, whose body contains TEXT; it
                              becomes the one awaited last, printed as
                              {"kind": "awaited", "room", "event_id",
                              "substring"}; none in time is a failure
    {"react": KEY}            reacts with KEY (an emoji) to the message
                              awaited last, printed as {"kind": "reacted",
                              "room", "event_id", "target", "key",
                              "encrypted"}; in an encrypted room encrypted,
                              as Element does, unless "encrypted": false
                              (sent in clear, as nio's room_send does)
    {"reply": TEXT}           sends TEXT in reply (m.in_reply_to) to the
                              message awaited last, printed as a "sent" line
                              whose "in_reply_to" names it
    {"thread": TEXT}          sends TEXT in the thread of the message
                              awaited last (its root, when it is in none),
                              printed as a "sent" line
    {"send_file": NAME, "data": TEXT, "caption": TEXT}
                              uploads TEXT as the file NAME (encrypted in an
                              encrypted room, as Element does) and sends it
                              as an m.file, its body the caption if given;
                              printed as a "sent" line
    {"await_file": NAME, "wait": SECONDS}
                              waits for a file named NAME from --to, after
                              the message awaited last, then downloads and
                              decrypts it, printed as {"kind": "file",
                              "event_id", "name", "text", "encrypted",
                              "caption"}; it becomes the one awaited last

and every message --to sends meanwhile is printed as a "reply" line as it
arrives; an edit's line names the message it "replaces", with its
"new_body", and a file's its "msgtype" (m.file, m.image…).

The device and its keys live in --store: the first run logs in with the
password, later runs with the same store are the same device again.
A new subcommand is a function of the parsed arguments (wrapped in
`logging_in` when it acts as the user), listed in COMMANDS with a function
adding its options.
"""
import argparse
import asyncio
import hashlib
import hmac
import html
import io
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request

from uuid import uuid4

from nio import (Api, AsyncClient, AsyncClientConfig, DownloadResponse, EnableEncryptionBuilder,
                 EncryptionError, LoginResponse, MegolmEvent, RoomCreateResponse, RoomEncryptedMedia,
                 RoomMessageEmote, RoomMessageMedia, RoomMessageNotice, RoomMessageText, RoomMemberEvent,
                 RoomPreset, RoomSendResponse, ReceiptEvent, TypingNoticeEvent, UploadResponse)
from nio.crypto import decrypt_attachment

MESSAGES = (RoomMessageText, RoomMessageNotice, RoomMessageEmote, RoomMessageMedia, RoomEncryptedMedia)
FILES = (RoomMessageMedia, RoomEncryptedMedia)
# The longest a single sync waits for news; a sync returns as soon as any
# arrives, so this only bounds how late a deadline is noticed.
SYNC_MS = 2000


def emit(line):
    print(json.dumps(line), flush=True)


def fail(message, code=1):
    print(f"matrix_client: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


# What a client exits with when --to declined the invitation.
DECLINED = 2


async def log_in(client, args):
    """Logs `client` in as --user: its device restored from --store when
    the store has one, a new device (its session kept there) otherwise."""
    session_file = os.path.join(args.store, "session.json")
    if os.path.exists(session_file):
        with open(session_file) as file:
            session = json.load(file)
        client.restore_login(session["user_id"], session["device_id"], session["access_token"])
    else:
        response = await client.login(args.password, device_name="matrix_client.py")
        if not isinstance(response, LoginResponse):
            fail(f"login as {args.user} failed: {response}")
        with open(session_file, "w") as file:
            json.dump({"user_id": response.user_id, "device_id": response.device_id,
                       "access_token": response.access_token}, file)
    await client.sync(timeout=0, full_state=True)
    if client.should_upload_keys:
        await client.keys_upload()


async def sync_until(client, deadline, done):
    """Syncs until `done()` holds (True) or `deadline` passes (False)."""
    while not done():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        await client.sync(timeout=int(min(left, SYNC_MS / 1000) * 1000))
    return True


async def create_room(client, args, **options):
    """A new room inviting --to, once --to joined it."""
    room_id = await new_room(client, args, **options)
    await joined(client, args, room_id)
    return room_id


async def new_room(client, args, **options):
    """A new room inviting --to, encrypted with --encrypted; its id."""
    initial_state = [EnableEncryptionBuilder().as_dict()] if args.encrypted else []
    response = await client.room_create(invite=[args.to], initial_state=initial_state, **options)
    if not isinstance(response, RoomCreateResponse):
        fail(f"creating a room failed: {response}")
    return response.room_id


async def joined(client, args, room_id):
    """Waits until --to is in the room (exits, saying so, if it declines)."""
    deadline = time.monotonic() + args.wait_join
    # --to's memberships in the room, in order, as its timeline tells them:
    # it declined if it left (or was banned) without having joined.
    memberships = []

    async def on_member(room, event):
        if room.room_id == room_id and event.state_key == args.to:
            memberships.append(event.membership)

    client.add_event_callback(on_member, RoomMemberEvent)

    def declined():
        return "join" not in memberships and ("leave" in memberships or "ban" in memberships)

    def is_in():
        # A room's `users` holds the invited as well as the joined.
        room = client.rooms.get(room_id)
        return room is not None and args.to in room.users and args.to not in room.invited_users

    await sync_until(client, deadline, lambda: is_in() or declined())
    if declined():
        fail(f"{args.to} declined the invitation", DECLINED)
    if not is_in():
        fail(f"{args.to} did not join {room_id} within {args.wait_join} s")


async def send_event(client, room_id, event_type, content, encrypted=True):
    """Sends an event into the room, encrypted if the room is and `encrypted`
    holds; its event id. A reaction too is encrypted then, as Element does
    (its m.relates_to copied in clear, as the spec says), where nio's
    room_send would send it in clear."""
    if client.should_query_keys:
        await client.keys_query()
    room = client.rooms[room_id]
    if room.encrypted and not encrypted:
        # Sent as it is: room_send would encrypt anything but a reaction.
        method, path, data = Api.room_send(client.access_token, room_id, event_type, content, uuid4())
        response = await client._send(RoomSendResponse, method, path, data, (room_id,))
    elif room.encrypted and event_type == "m.reaction":
        # What room_send does before it encrypts, and the encryption it skips.
        if not room.members_synced:
            await client.joined_members(room_id)
            if client.should_query_keys:
                await client.keys_query()
        if client.olm.should_share_group_session(room_id):
            await client.share_group_session(room_id, ignore_unverified_devices=True)
        event_type, content = client.encrypt(room_id, event_type, content)
        method, path, data = Api.room_send(client.access_token, room_id, event_type, content, uuid4())
        response = await client._send(RoomSendResponse, method, path, data, (room_id,))
    else:
        response = await client.room_send(room_id, event_type, content,
                                          ignore_unverified_devices=True)
    if not isinstance(response, RoomSendResponse):
        fail(f"sending {event_type} into {room_id} failed: {response}")
    return response.event_id


async def send(client, room_id, content):
    event_id = await send_event(client, room_id, "m.room.message", content)
    in_reply_to = content.get("m.relates_to", {}).get("m.in_reply_to", {}).get("event_id")
    emit({"kind": "sent", "room": room_id, "event_id": event_id, "body": content["body"],
          "in_reply_to": in_reply_to})


def reply_line(room_id, event):
    content = event.source.get("content", {})
    relates = content.get("m.relates_to", {})
    return {"kind": "reply", "room": room_id, "sender": event.sender, "body": event.body,
            "formatted_body": getattr(event, "formatted_body", None),
            "msgtype": content.get("msgtype"),
            "decrypted": bool(event.decrypted), "event_id": event.event_id,
            "in_reply_to": relates.get("m.in_reply_to", {}).get("event_id"),
            "replaces": relates.get("event_id") if relates.get("rel_type") == "m.replace" else None,
            "new_body": content.get("m.new_content", {}).get("body"),
            "thread": relates.get("event_id") if relates.get("rel_type") == "m.thread" else None}


def listen(client, room_id, args):
    """Prints each message --to says in the room from now on, as it arrives.
    Returns `heard()`: the messages printed so far, in order (it tries
    again those not yet decrypted, whose key may come after them), and the
    events not yet decrypted."""
    seen, undecrypted = [], {}

    def take(event):
        if isinstance(event, MegolmEvent):
            event.room_id = room_id
            try:
                event = client.decrypt_event(event)
            except EncryptionError:
                undecrypted[event.event_id] = event
                return
        undecrypted.pop(event.event_id, None)
        if event.sender == args.to and isinstance(event, MESSAGES):
            seen.append(event)
            emit(reply_line(room_id, event))

    async def on_event(room, event):
        if room.room_id == room_id:
            take(event)

    client.add_event_callback(on_event, (MegolmEvent,) + MESSAGES)
    typing = []

    async def on_ephemeral(room, event):
        """Prints that --to was seen typing (once), and each read receipt it
        sent."""
        if room.room_id != room_id:
            return
        if isinstance(event, TypingNoticeEvent) and args.to in event.users and not typing:
            typing.append(True)
            emit({"kind": "typing", "room": room_id})
        if isinstance(event, ReceiptEvent):
            for receipt in event.receipts:
                if receipt.user_id == args.to and receipt.receipt_type == "m.read":
                    emit({"kind": "read", "room": room_id, "event_id": receipt.event_id})

    client.add_ephemeral_callback(on_ephemeral, (TypingNoticeEvent, ReceiptEvent))

    def heard():
        for event in list(undecrypted.values()):
            take(event)
        return seen

    return heard, undecrypted


async def print_replies(client, room_id, args):
    """Prints what --to says in the room; exits non-zero if it said fewer
    than --replies messages."""
    heard, undecrypted = listen(client, room_id, args)

    def enough():
        return len(heard()) >= args.replies

    deadline = time.monotonic() + args.wait_reply
    if not await sync_until(client, deadline, enough):
        locked = f", and {len(undecrypted)} it could not decrypt" if undecrypted else ""
        fail(f"{len(heard())} of {args.replies} replies from {args.to} in {room_id} "
             f"within {args.wait_reply} s{locked}")


async def dm(client, args):
    room_id = await create_room(client, args, is_direct=True,
                                preset=RoomPreset.trusted_private_chat)
    await send(client, room_id, {"msgtype": "m.text", "body": args.text})
    await print_replies(client, room_id, args)


async def room(client, args):
    room_id = await create_room(client, args, name=args.name,
                                preset=RoomPreset.private_chat)
    # Mentioned as Matrix clients do: a pill in the formatted body, the name
    # in the plain one, and the id in m.mentions.
    name = client.rooms[room_id].user_name(args.to) or args.to
    pill = f'<a href="https://matrix.to/#/{args.to}">{html.escape(name)}</a>'
    await send(client, room_id, {
        "msgtype": "m.text", "body": f"{name}: {args.text}",
        "format": "org.matrix.custom.html",
        "formatted_body": f"{pill}: {html.escape(args.text)}",
        "m.mentions": {"user_ids": [args.to]},
    })
    await print_replies(client, room_id, args)


# Each kind of step of a script, and the options it may have besides.
STEPS = {"say": (), "await": ("wait",), "react": ("encrypted",), "reply": (), "thread": (),
         "send_file": ("data", "caption"), "await_file": ("wait",)}


def parse_steps(text):
    """--steps as a list of steps, each checked; exits non-zero, naming the
    step, if one is not a step."""
    try:
        steps = json.loads(text)
    except ValueError as error:
        fail(f"--steps is not JSON: {error}")
    if not isinstance(steps, list):
        fail(f"--steps is not a JSON list: {text}")
    awaited = False
    for index, step in enumerate(steps):
        kinds = [kind for kind in STEPS if isinstance(step, dict) and kind in step]
        if len(kinds) != 1 or not isinstance(step[kinds[0]], str):
            fail(f"step {index}, {json.dumps(step, ensure_ascii=False)}, is not one of {', '.join(STEPS)} with a string")
        kind = kinds[0]
        unknown = set(step) - {kind, *STEPS[kind]}
        if unknown:
            fail(f"step {index}, {json.dumps(step, ensure_ascii=False)}: {kind} has no option {', '.join(sorted(unknown))}")
        if not isinstance(step.get("wait", 0), (int, float)) or not isinstance(step.get("encrypted", True), bool):
            fail(f"step {index}, {json.dumps(step, ensure_ascii=False)}: wait is a number of seconds, encrypted true or false")
        if kind in ("react", "reply", "thread") and not awaited:
            fail(f"step {index}, {json.dumps(step, ensure_ascii=False)}: no message awaited before it to {kind} to")
        awaited = awaited or kind in ("await", "await_file")
    return steps


async def send_file(client, room_id, step):
    """Uploads the step's file, encrypted if the room is, and sends it."""
    data = step.get("data", "").encode()
    encrypted = client.rooms[room_id].encrypted
    response, keys = await client.upload(io.BytesIO(data), content_type="text/plain",
                                         filename=step["send_file"], encrypt=encrypted,
                                         filesize=len(data))
    if not isinstance(response, UploadResponse):
        fail(f"uploading {step['send_file']} failed: {response}")
    content = {"msgtype": "m.file", "body": step.get("caption", step["send_file"]),
               "filename": step["send_file"], "info": {"mimetype": "text/plain", "size": len(data)}}
    if encrypted:
        content["file"] = {**keys, "url": response.content_uri}
    else:
        content["url"] = response.content_uri
    await send(client, room_id, content)


async def fetched_file(client, event):
    """The text of the file `event` carries, decrypted if it came encrypted."""
    response = await client.download(mxc=event.url)
    if not isinstance(response, DownloadResponse):
        fail(f"downloading {event.url} failed: {response}")
    data = response.body
    if isinstance(event, RoomEncryptedMedia):
        data = decrypt_attachment(data, event.key["k"], event.hashes["sha256"], event.iv)
    return data.decode()


async def script(client, args):
    steps = parse_steps(args.steps)
    if args.room:
        room_id = args.room
        await joined(client, args, room_id)
    else:
        room_id = await create_room(client, args, is_direct=True,
                                    preset=RoomPreset.trusted_private_chat)
    heard, undecrypted = listen(client, room_id, args)
    # How many of --to's messages the awaits went past, and the last awaited.
    looked, awaited = 0, None
    for step in steps:
        if "say" in step:
            text = step["say"]
            if "{token}" in text:
                said = next(event.body for event in heard() if event.event_id == awaited)
                found = re.search(r"\(([A-Z2-9]{4,})\)", said)
                if not found:
                    fail(f"no approval token in the message awaited last: {said!r}")
                text = text.replace("{token}", found.group(1))
            await send(client, room_id, {"msgtype": "m.text", "body": text})
        elif "reply" in step:
            await send(client, room_id, {"msgtype": "m.text", "body": step["reply"],
                                         "m.relates_to": {"m.in_reply_to": {"event_id": awaited}}})
        elif "thread" in step:
            root = next(event for event in heard() if event.event_id == awaited)
            relates = root.source.get("content", {}).get("m.relates_to", {})
            root_id = relates.get("event_id") if relates.get("rel_type") == "m.thread" else awaited
            await send(client, room_id, {"msgtype": "m.text", "body": step["thread"], "m.relates_to": {
                "rel_type": "m.thread", "event_id": root_id, "is_falling_back": True,
                "m.in_reply_to": {"event_id": awaited}}})
        elif "send_file" in step:
            await send_file(client, room_id, step)
        elif "await_file" in step:
            name, wait = step["await_file"], step.get("wait", args.wait_reply)

            def found():
                seen = heard()
                return next((index for index in range(looked, len(seen))
                             if isinstance(seen[index], FILES)
                             and name in (seen[index].source["content"].get("filename"), seen[index].body)), None)

            if not await sync_until(client, time.monotonic() + wait, lambda: found() is not None):
                fail(f"no file {name!r} from {args.to} in {room_id} within {wait} s")
            index = found()
            event = heard()[index]
            awaited, looked = event.event_id, index + 1
            content = event.source["content"]
            emit({"kind": "file", "event_id": event.event_id, "name": content.get("filename") or event.body,
                  "text": await fetched_file(client, event),
                  "encrypted": isinstance(event, RoomEncryptedMedia),
                  "caption": event.body if content.get("filename") not in (None, event.body) else None})
        elif "react" in step:
            encrypted = step.get("encrypted", True)
            event_id = await send_event(client, room_id, "m.reaction", {"m.relates_to": {
                "rel_type": "m.annotation", "event_id": awaited, "key": step["react"]}},
                encrypted=encrypted)
            emit({"kind": "reacted", "room": room_id, "event_id": event_id, "target": awaited,
                  "key": step["react"],
                  "encrypted": bool(encrypted and client.rooms[room_id].encrypted)})
        else:
            wanted, wait = step["await"], step.get("wait", args.wait_reply)

            def match():
                """The index in heard() of the first message past `looked`
                that contains `wanted`, or None."""
                seen = heard()
                return next((index for index in range(looked, len(seen))
                             if wanted in seen[index].body), None)

            if not await sync_until(client, time.monotonic() + wait, lambda: match() is not None):
                bodies = [event.body for event in heard()[looked:]]
                locked = f", and {len(undecrypted)} it could not decrypt" if undecrypted else ""
                fail(f"no message from {args.to} in {room_id} containing {wanted!r} within "
                     f"{wait} s; it said meanwhile {json.dumps(bodies, ensure_ascii=False)}{locked}")
            index = match()
            awaited, looked = heard()[index].event_id, index + 1
            emit({"kind": "awaited", "room": room_id, "event_id": awaited, "substring": wanted})


def room_options(parser):
    conversation_options(parser)
    parser.add_argument("--text", required=True)
    parser.add_argument("--replies", type=int, default=1)


def conversation_options(parser):
    login_options(parser)
    parser.add_argument("--to", required=True, help="the assistant's user id")
    parser.add_argument("--encrypted", action="store_true")
    parser.add_argument("--wait-join", type=float, default=60)
    parser.add_argument("--wait-reply", type=float, default=60)


def script_options(parser):
    conversation_options(parser)
    parser.add_argument("--steps", required=True, help="a JSON list of steps")
    parser.add_argument("--room", help="an existing room to hold it in, instead of a new direct chat")


async def create(client, args):
    room_id = await new_room(client, args, name=args.name, preset=RoomPreset.private_chat)
    emit({"kind": "created", "room": room_id})


async def pingpong(client, args):
    room_id = await create_room(client, args, is_direct=True,
                                preset=RoomPreset.trusted_private_chat)
    heard, _ = listen(client, room_id, args)
    round_trips = []
    for n in range(args.count):
        text = f"ping {n}"
        looked = len(heard())
        started = time.monotonic()
        await send(client, room_id, {"msgtype": "m.text", "body": text})

        def answered():
            return any(event.body.endswith(text) for event in heard()[looked:])

        if not await sync_until(client, started + args.wait_reply, answered):
            fail(f"no answer to {text!r} from {args.to} within {args.wait_reply} s")
        round_trips.append((time.monotonic() - started) * 1000)
    emit({"kind": "round_trips", "ms": round_trips})


def pingpong_options(parser):
    conversation_options(parser)
    parser.add_argument("--count", type=int, required=True)


def create_options(parser):
    conversation_options(parser)
    parser.add_argument("--name", required=True)


def group_room_options(parser):
    room_options(parser)
    parser.add_argument("--name", required=True)


def login_options(parser):
    parser.add_argument("--homeserver", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--store", required=True)


def register_options(parser):
    parser.add_argument("--homeserver", required=True)
    parser.add_argument("--shared-secret", required=True)
    parser.add_argument("--user", required=True, help="the new user's local part")
    parser.add_argument("--password", required=True)
    parser.add_argument("--admin", action="store_true")


async def register(args):
    """Registers a user through Synapse's shared-secret admin API, and prints
    {"user_id", "access_token", "device_id"}."""
    url = f"{args.homeserver.rstrip('/')}/_synapse/admin/v1/register"
    nonce = json.load(urllib.request.urlopen(url, timeout=30))["nonce"]
    signed = "\0".join([nonce, args.user, args.password, "admin" if args.admin else "notadmin"])
    mac = hmac.new(args.shared_secret.encode(), signed.encode(), hashlib.sha1)
    body = json.dumps({"nonce": nonce, "username": args.user, "password": args.password,
                       "admin": args.admin, "mac": mac.hexdigest()}).encode()
    request = urllib.request.Request(url, body, {"Content-Type": "application/json"})
    try:
        answer = json.load(urllib.request.urlopen(request, timeout=30))
    except urllib.error.HTTPError as error:
        fail(f"registering {args.user} failed: {error.code} {error.read().decode()}")
    emit({key: answer[key] for key in ("user_id", "access_token", "device_id")})


def logging_in(command):
    """`command(client, args)` as a command of `args` alone, logged in around it."""
    async def run(args):
        os.makedirs(args.store, exist_ok=True)
        config = AsyncClientConfig(encryption_enabled=True, store_sync_tokens=True)
        client = AsyncClient(args.homeserver, args.user, store_path=args.store, config=config)
        try:
            await log_in(client, args)
            await command(client, args)
        finally:
            await client.close()
    return run


# Each command: what it does with the parsed arguments, and its options.
COMMANDS = {
    "register": (register, register_options),
    "dm": (logging_in(dm), room_options),
    "room": (logging_in(room), group_room_options),
    "script": (logging_in(script), script_options),
    "create": (logging_in(create), create_options),
    "pingpong": (logging_in(pingpong), pingpong_options),
}


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, (_, options) in COMMANDS.items():
        options(commands.add_parser(name))
    args = parser.parse_args(argv)
    asyncio.run(COMMANDS[args.command][0](args))


if __name__ == "__main__":
    main(sys.argv[1:])
