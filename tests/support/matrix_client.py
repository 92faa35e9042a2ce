"""A small end-to-end encrypting Matrix client for the tests, on matrix-nio.

A test runs it as a child with the interpreter of the environment
`.ci/install-synapse` makes. Each subcommand does one thing as a person in
a chat client would, and prints what happened as JSON lines on stdout;
what goes wrong is said on stderr, with a non-zero exit.

    register  makes a user through Synapse's shared-secret admin API
    dm        opens a direct chat with --to, sends --text, prints the replies
    room      makes a named group room, invites --to, sends --text
              mentioning it, prints the replies

dm and room log in, wait for --to to join, and print first the message sent:

    {"kind": "sent", "room": ..., "event_id": ...}

then each message --to sends into the room, until --replies of them came
or --wait-reply seconds passed:

    {"kind": "reply", "room": ..., "sender": ..., "body": ...,
     "formatted_body": ..., "msgtype": ..., "decrypted": ...,
     "event_id": ..., "in_reply_to": ..., "replaces": ...}

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
import json
import os
import sys
import time
import urllib.error
import urllib.request

from nio import (AsyncClient, AsyncClientConfig, EnableEncryptionBuilder,
                 EncryptionError, LoginResponse, MegolmEvent, RoomCreateResponse, RoomPreset,
                 RoomMessageEmote, RoomMessageNotice, RoomMessageText,
                 RoomSendResponse)

MESSAGES = (RoomMessageText, RoomMessageNotice, RoomMessageEmote)
# The longest a single sync waits for news; a sync returns as soon as any
# arrives, so this only bounds how late a deadline is noticed.
SYNC_MS = 2000


def emit(line):
    print(json.dumps(line), flush=True)


def fail(message):
    print(f"matrix_client: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


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
    initial_state = [EnableEncryptionBuilder().as_dict()] if args.encrypted else []
    response = await client.room_create(invite=[args.to], initial_state=initial_state, **options)
    if not isinstance(response, RoomCreateResponse):
        fail(f"creating a room failed: {response}")
    room_id = response.room_id
    deadline = time.monotonic() + args.wait_join

    def joined():
        # A room's `users` holds the invited as well as the joined.
        room = client.rooms.get(room_id)
        return room is not None and args.to in room.users and args.to not in room.invited_users

    if not await sync_until(client, deadline, joined):
        fail(f"{args.to} did not join {room_id} within {args.wait_join} s")
    return room_id


async def send(client, room_id, content):
    if client.should_query_keys:
        await client.keys_query()
    response = await client.room_send(room_id, "m.room.message", content,
                                      ignore_unverified_devices=True)
    if not isinstance(response, RoomSendResponse):
        fail(f"sending into {room_id} failed: {response}")
    emit({"kind": "sent", "room": room_id, "event_id": response.event_id})


def reply_line(room_id, event):
    relates = event.source.get("content", {}).get("m.relates_to", {})
    return {"kind": "reply", "room": room_id, "sender": event.sender, "body": event.body,
            "formatted_body": event.formatted_body,
            "msgtype": event.source.get("content", {}).get("msgtype"),
            "decrypted": bool(event.decrypted), "event_id": event.event_id,
            "in_reply_to": relates.get("m.in_reply_to", {}).get("event_id"),
            "replaces": relates.get("event_id") if relates.get("rel_type") == "m.replace" else None}


async def print_replies(client, room_id, args):
    """Prints what --to says in the room; exits non-zero if it said nothing."""
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
            seen.append(event.event_id)
            emit(reply_line(room_id, event))

    async def on_event(room, event):
        if room.room_id == room_id:
            take(event)

    client.add_event_callback(on_event, (MegolmEvent,) + MESSAGES)

    def enough():
        # A room key may come after the message it opens: try again.
        for event in list(undecrypted.values()):
            take(event)
        return len(seen) >= args.replies

    deadline = time.monotonic() + args.wait_reply
    if not await sync_until(client, deadline, enough):
        locked = f", and {len(undecrypted)} it could not decrypt" if undecrypted else ""
        fail(f"{len(seen)} of {args.replies} replies from {args.to} in {room_id} "
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


def room_options(parser):
    login_options(parser)
    parser.add_argument("--to", required=True, help="the assistant's user id")
    parser.add_argument("--text", required=True)
    parser.add_argument("--encrypted", action="store_true")
    parser.add_argument("--wait-join", type=float, default=60)
    parser.add_argument("--wait-reply", type=float, default=60)
    parser.add_argument("--replies", type=int, default=1)


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
