// The Chat page with scripting on: a message is sent without leaving the
// page (Enter sends, Shift+Enter starts a new line), and the reply shows as
// it is written, read from the server-sent events the POST answers with.
// The page opens at the newest message and follows a reply down while it
// is written, unless the person scrolled up to read (then "Newest" takes
// them back). Code blocks get a copy button. Model text only ever goes
// into the page through textContent; once a turn is done, the chat is
// taken fresh from the server, which renders the Markdown with everything
// escaped. Without scripting the form posts as it is and the page comes
// back.
"use strict";
(function () {
  var form = document.getElementById("send");
  var chat = document.getElementById("chat");
  if (!form || !chat || !window.fetch || !window.TextDecoder || !window.FormData) return;
  var here = "/chat/" + chat.getAttribute("data-chat");
  var state = document.getElementById("chat-state");
  var sendButton = document.getElementById("send-button");
  var stop = document.getElementById("stop");
  var jump = document.getElementById("jump");
  var message = document.getElementById("message");
  var running = false;
  // Set when the running reply was stopped, for the line under the form.
  var stopped = false;
  // Whether the view follows the newest message: true until the person
  // scrolls up, and again once they are back at the bottom.
  var following = true;

  function conversation() { return document.getElementById("conversation"); }

  // What scrolls the log: the nearest ancestor that scrolls, else the page.
  function scroller() {
    for (var node = conversation().parentElement; node && node !== document.body; node = node.parentElement) {
      var overflow = window.getComputedStyle(node).overflowY;
      if ((overflow === "auto" || overflow === "scroll") && node.scrollHeight > node.clientHeight) return node;
    }
    return document.scrollingElement || document.documentElement;
  }

  function atBottom() {
    var box = scroller();
    return box.scrollHeight - box.scrollTop - box.clientHeight < 48;
  }

  function toNewest() {
    var box = scroller();
    box.scrollTop = box.scrollHeight;
    following = true;
    jump.hidden = true;
  }

  // After the log grew: down with it, or offer the way down.
  function grew() {
    if (following) toNewest();
    else jump.hidden = false;
  }

  function onScroll() {
    following = atBottom();
    jump.hidden = following;
  }
  window.addEventListener("scroll", onScroll, { passive: true });
  document.addEventListener("scroll", onScroll, { passive: true, capture: true });
  jump.addEventListener("click", toNewest);

  // A fresh id for the next message: a form sent twice enters once.
  function freshId() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    var hex = "";
    for (var i = 0; i < bytes.length; i++) hex += (bytes[i] + 256).toString(16).slice(1);
    form.querySelector('input[name="id"]').value = hex;
  }

  // Copies `text`: the clipboard API where the page may use it, else a
  // selection copied the old way.
  function copy(text) {
    if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text);
    return new Promise(function (resolve, reject) {
      var area = document.createElement("textarea");
      area.value = text;
      area.setAttribute("readonly", "");
      area.className = "hidden";
      document.body.appendChild(area);
      area.select();
      var done = document.execCommand && document.execCommand("copy");
      area.remove();
      if (done) resolve(); else reject(new Error("not copied"));
    });
  }

  // A copy button on each code block of the replies.
  function copyButtons(root) {
    var blocks = root.querySelectorAll(".markdown pre");
    for (var i = 0; i < blocks.length; i++) {
      var pre = blocks[i];
      if (pre.parentElement.classList.contains("code-block")) continue;
      var box = document.createElement("div");
      box.className = "code-block";
      pre.parentElement.insertBefore(box, pre);
      box.appendChild(pre);
      var button = document.createElement("button");
      button.type = "button";
      button.className = "copy";
      button.textContent = "Copy";
      button.setAttribute("aria-label", "Copy this code");
      button.addEventListener("click", (function (pre, button) {
        return function () {
          copy(pre.textContent).then(
            function () { button.textContent = "Copied"; },
            function () { button.textContent = "Select and copy"; }
          );
          window.setTimeout(function () { button.textContent = "Copy"; }, 2000);
        };
      })(pre, button));
      box.appendChild(button);
    }
  }

  function bubble(who, cls, text) {
    var empty = document.getElementById("empty");
    if (empty) empty.remove();
    var row = document.createElement("div");
    row.className = "message " + cls;
    var name = document.createElement("span");
    name.className = "who";
    name.textContent = who;
    var said = document.createElement("div");
    said.className = "said";
    var body = document.createElement("div");
    body.className = "text";
    body.textContent = text;
    said.appendChild(body);
    row.appendChild(name);
    row.appendChild(said);
    var turn = conversation().lastElementChild;
    if (!turn || !turn.classList.contains("live-turn")) {
      turn = document.createElement("article");
      turn.className = "turn live-turn";
      conversation().appendChild(turn);
    }
    turn.appendChild(row);
    grew();
    return body;
  }

  // The chat as the server keeps it: the Markdown rendered, an approval
  // that waits with its buttons, and the list of chats (a first message
  // names its chat).
  function refresh() {
    return fetch(here, { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html || running) return;
        var page = new DOMParser().parseFromString(html, "text/html");
        var fresh = page.getElementById("conversation");
        var now = conversation();
        if (fresh && now) {
          now.replaceWith(fresh);
          copyButtons(fresh);
        }
        var list = page.querySelector(".chat-list ul");
        var shown = document.querySelector(".chat-list ul");
        if (list && shown) shown.replaceWith(list);
        var name = page.getElementById("chat-name");
        var shownName = document.getElementById("chat-name");
        if (name && shownName) shownName.textContent = name.textContent;
        grew();
      });
  }

  function finish(note) {
    running = false;
    stop.hidden = true;
    sendButton.disabled = false;
    state.textContent = note || (stopped ? "Stopped. Your message is kept; ask again when you want an answer." : "");
    stopped = false;
    refresh();
  }

  // The `event:` and `data:` of each event in `chunk`, whole events only.
  function parse(buffer, handle) {
    var events = buffer.split("\n\n");
    var rest = events.pop();
    events.forEach(function (raw) {
      var name = "message", data = "";
      raw.split("\n").forEach(function (line) {
        if (line.indexOf("event:") === 0) name = line.slice(6).trim();
        else if (line.indexOf("data:") === 0) data += line.slice(5).trim();
      });
      if (data) handle(name, JSON.parse(data));
    });
    return rest;
  }

  function read(response) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    var reply = null;
    function handle(name, data) {
      if (name === "draft" || name === "reply") {
        if (!reply) reply = bubble("Assistant", "assistant", "");
        reply.textContent = data.text;
        grew();
        if (name === "reply") reply = null;
        state.textContent = name === "draft" ? "The assistant is writing…" : "";
      } else if (name === "approval") {
        state.textContent = "The assistant waits for your answer below.";
      } else if (name === "file") {
        var note = bubble("Assistant", "assistant", "Sent a file: ");
        var link = document.createElement("a");
        link.href = data.href;
        link.setAttribute("download", "");
        link.textContent = data.name;
        note.appendChild(link);
        if (data.caption) note.appendChild(document.createTextNode(" — " + data.caption));
      } else if (name === "stopped") {
        if (reply && data.partial) reply.textContent = data.partial;
        stopped = true;
      } else if (name === "end") {
        finish("");
      }
    }
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) {
          if (running) finish("");
          return;
        }
        buffer = parse(buffer + decoder.decode(chunk.value, { stream: true }), handle);
        return pump();
      });
    }
    return pump();
  }

  // A refused message: the error page's words.
  function refused(response) {
    return response.text().then(function (html) {
      var page = new DOMParser().parseFromString(html, "text/html");
      var why = page.querySelector("main p");
      running = false;
      stop.hidden = true;
      sendButton.disabled = false;
      state.textContent = why ? why.textContent : "The message was not taken (" + response.status + ").";
      state.classList.add("error");
    });
  }

  // A message, its reply streamed back.
  function post(data) {
    return fetch(here, {
      method: "POST",
      body: data,
      credentials: "same-origin",
      headers: { Accept: "text/event-stream" },
    });
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    if (running) return;
    var data = new FormData(form);
    var text = (data.get("text") || "").trim();
    var file = form.querySelector('input[name="file"]').files[0];
    if (!text && !file) {
      state.textContent = "Write a message or choose a file to send.";
      return;
    }
    freshId();
    running = true;
    state.classList.remove("error");
    sendButton.disabled = true;
    stop.hidden = false;
    state.textContent = "Sent; waiting for the assistant…";
    following = true;
    bubble("You", "person", file ? text + (text ? "\n" : "") + "(file: " + file.name + ")" : text);
    message.value = "";
    form.querySelector('input[name="file"]').value = "";
    post(data)
      .then(function (response) {
        var type = response.headers.get("content-type") || "";
        if (!response.ok || type.indexOf("text/event-stream") !== 0) return refused(response);
        return read(response);
      })
      .catch(function () { finish("The connection was lost; reload the page to see the reply."); });
  });

  // Enter sends; Shift+Enter (or a key held with it, or an input method
  // still composing) makes a new line.
  message.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || event.shiftKey || event.altKey || event.ctrlKey || event.metaKey || event.isComposing) return;
    event.preventDefault();
    if (form.requestSubmit) form.requestSubmit(sendButton);
    else form.dispatchEvent(new Event("submit", { cancelable: true }));
  });

  // Stop: the chat command, as any gateway sends it.
  stop.addEventListener("click", function () {
    var data = new FormData();
    data.append("csrf", chat.getAttribute("data-csrf"));
    data.append("text", "/stop");
    state.textContent = "Stopping…";
    // Not streamed: Stop takes none of the places replies are streamed in,
    // so it works however many are taken; the page it would be sent back
    // to is not fetched.
    fetch(here, { method: "POST", body: data, credentials: "same-origin", redirect: "manual" });
  });

  // An answer to an approval, without leaving the page: the reply that
  // follows arrives on the chat's stream below.
  chat.addEventListener("submit", function (event) {
    var answer = event.target;
    if (answer === form || answer.getAttribute("action") !== "/approvals/decide") return;
    event.preventDefault();
    var card = answer.closest(".chat-approval");
    fetch("/approvals/decide", {
      method: "POST",
      body: new URLSearchParams(new FormData(answer)),
      credentials: "same-origin",
    }).then(function () {
      if (card) card.remove();
      state.textContent = "Answered; the assistant goes on.";
    });
  });

  // A turn this page did not start (the rest of one an approval let go
  // on, a message from another tab) shows once it is done.
  if (window.EventSource) {
    var source = new EventSource(here + "/stream");
    window.addEventListener("pagehide", function () { source.close(); });
    source.addEventListener("end", function () { if (!running) refresh(); });
    source.addEventListener("draft", function () {
      if (!running) state.textContent = "The assistant is writing…";
    });
  }

  copyButtons(conversation());
  // Opened at the newest message.
  toNewest();
})();
