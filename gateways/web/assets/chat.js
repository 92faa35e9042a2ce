// The Chat page with scripting on: a message is sent without leaving the
// page, and the reply shows as it is written, read from the server-sent
// events the POST answers with. Model text only ever goes into the page
// through textContent; once a turn is done, the conversation is taken fresh
// from the server, which renders the Markdown with everything escaped.
// Without scripting the form posts as it is and the page comes back.
"use strict";
(function () {
  var form = document.getElementById("send");
  if (!form || !window.fetch || !window.TextDecoder || !window.FormData) return;
  var chat = document.getElementById("chat");
  var state = document.getElementById("chat-state");
  var sendButton = document.getElementById("send-button");
  var stop = document.getElementById("stop");
  var running = false;
  // Set when the running reply was stopped, for the line under the form.
  var stopped = false;
  // Set from a stop to the next message: what the stopped reply showed
  // stays on the page, though the history does not keep it.
  var keepShown = false;

  function conversation() { return document.getElementById("conversation"); }

  // A fresh id for the next message: a form sent twice enters once.
  function freshId() {
    var bytes = new Uint8Array(16);
    window.crypto.getRandomValues(bytes);
    var hex = "";
    for (var i = 0; i < bytes.length; i++) hex += (bytes[i] + 256).toString(16).slice(1);
    form.querySelector('input[name="id"]').value = hex;
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
    row.scrollIntoView({ block: "end" });
    return body;
  }

  // The conversation as the server keeps it: the Markdown rendered, and
  // an approval that waits with its buttons.
  function refresh() {
    return fetch("/chat", { credentials: "same-origin" })
      .then(function (response) { return response.ok ? response.text() : null; })
      .then(function (html) {
        if (!html) return;
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("conversation");
        var now = conversation();
        if (fresh && now && !running && !keepShown) {
          now.replaceWith(fresh);
          fresh.lastElementChild && fresh.lastElementChild.scrollIntoView({ block: "end" });
        }
      });
  }

  function finish(note) {
    running = false;
    stop.hidden = true;
    sendButton.disabled = false;
    state.textContent = note || (stopped ? "Stopped." : "");
    // A stopped reply stays as far as it got until the page is reloaded;
    // the history keeps only what the turn finished.
    if (stopped) {
      keepShown = true;
      bubble("passepartout", "notice", "Stopped. A stopped exchange is not kept: once the page is reloaded, this message and its reply are gone.");
    } else refresh();
    stopped = false;
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
      finish(why ? why.textContent : "The message was not taken (" + response.status + ").");
      state.classList.add("error");
    });
  }

  // A message, its reply streamed back.
  function post(data) {
    return fetch("/chat", {
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
    keepShown = false;
    state.classList.remove("error");
    sendButton.disabled = true;
    stop.hidden = false;
    state.textContent = "Sent; waiting for the assistant…";
    bubble("You", "person", file ? text + (text ? "\n" : "") + "(file: " + file.name + ")" : text);
    form.querySelector("textarea").value = "";
    form.querySelector('input[name="file"]').value = "";
    post(data)
      .then(function (response) {
        var type = response.headers.get("content-type") || "";
        if (!response.ok || type.indexOf("text/event-stream") !== 0) return refused(response);
        return read(response);
      })
      .catch(function () { finish("The connection was lost; reload the page to see the reply."); });
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
    fetch("/chat", { method: "POST", body: data, credentials: "same-origin", redirect: "manual" });
  });

  // An answer to an approval, without leaving the page: the reply that
  // follows arrives on the conversation's stream below.
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
    var source = new EventSource("/chat/stream");
    window.addEventListener("pagehide", function () { source.close(); });
    source.addEventListener("end", function () { if (!running && !keepShown) refresh(); });
    source.addEventListener("draft", function () {
      if (!running) state.textContent = "The assistant is writing…";
    });
  }
})();
