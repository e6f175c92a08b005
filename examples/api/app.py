"""Example API behind dcserve: a small Starlette app with the endpoints a reverse proxy must handle.

Run it with `python examples/api/serve.py --port 8000` (uvicorn, see serve.py), then put dcserve in
front of it: `dcserve serve --upstream http://127.0.0.1:8000 --dictionaries '/api/items*'`.

Endpoints (all under /api/):
  items            JSON list of news items (compressible; a good dictionary for `gzip` and `me`)
  items/{n}        one version of the list (n changes a few items: deltas against an older version)
  echo             method, path, headers and body of the request as JSON (any method; POST with
                   Content-Length or chunked bodies)
  slow?ms=N        answers after N milliseconds
  big?bytes=N      streams N bytes (chunked, 64 KiB pieces; `&length=1` sends Content-Length)
  gzip             the items JSON gzip-encoded when the request accepts gzip, identity otherwise
  notransform      JSON with Cache-Control: no-transform
  hop              a response carrying hop-by-hop fields and fields named in Connection
  me               a per-user JSON body chosen by Authorization; every user gets the same head
                   (same length, same ETag): a cache trusting the ETag would mix users
  truncate?bytes=N announces N bytes (Content-Length, or chunked with &chunked=1) and closes the
                   connection after sending half of them
  conn-count       number of TCP connections the server has accepted (see serve.py)
  any/...          any method, extension methods (PROPFIND, QUERY, lower-case tokens) included: the
                   method, target, headers and body as JSON (see `EveryMethod`)
Also, for any path: `OPTIONS *` answers 200 with `Allow` and the same JSON; `TRACE` answers 200
`message/http` reflecting the request head as received (RFC 9110 §9.3.8).

Live responses (issue #14):
  /latest_news              the news feed: JSON, one new article per update (Cache-Control: no-cache)
  /latest_news/update       POST: adds one article; answers the new article count
  /api/calendar             the calendar of the user named by `Authorization: Bearer TOKEN` (401
                            without one); private, no-cache
  /api/calendar/update      POST (same bearer token): adds one event to that user's calendar
  /api/calendar-tagged      the same calendar, naming its owner in `Dictionary-Partition: <user id>` for a
                            proxy rule partitioned by `upstreamHeader` (dcserve removes the field)
  /api/calendar-owned       the same, but the API states a lifetime that lets clients keep the response
                            as a dictionary (private, max-age=0, stale-while-revalidate=86400)
  /api/profile?rev=R        a small per-user document (about 660 bytes, private, no-cache) at revision R
                            (default 1): many users, small bodies (retention tests of per-user partitions)

One-on-one chats (issue #16, history dictionaries), per-user bearer tokens `alice`, `bob`, `carol`
(401 without a known token, 404 for a chat the user is not in):
  /api/chats                        GET: the caller's chats; POST {"with": USER}: a new chat, answers its id
  /api/chats/{chat}/messages?since=N  GET: the chat and its messages with id > N (private, no-cache)
  /api/chats/{chat}/messages        POST {"text": "..."}: adds a message by the caller, answers it (201)
Seeded chats: 1 alice+bob, 2 alice+carol, 3 bob+carol, each with a few messages.

WebSocket (through dcserve's upgrade tunnel; uvicorn needs the `websockets` package):
  /api/ws                   echoes every text and binary message; text commands:
                            `big N` sends one binary message of N bytes; `flood N SIZE` sends N binary
                            messages of SIZE bytes; `close CODE` closes from the server side with CODE;
                            `headers` sends the upgrade request's headers as JSON
  /api/ws?refuse=1          refuses the upgrade (uvicorn answers 403)
"""
from __future__ import annotations

import asyncio
import gzip
import hashlib
import json

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

#: Incremented by serve.py's protocol class for every accepted TCP connection.
CONNECTIONS = {"accepted": 0}


def items_document(version: int = 1) -> bytes:
    """The items list; `version` changes a few entries so versions share most of their bytes."""
    items = []
    for i in range(40):
        title = f"Headline number {i} about the city council and the weather"
        if i % 10 == version % 10:
            title = f"Updated story {i} (version {version}): the bridge reopens"
        items.append({"id": i, "title": title, "section": ["world", "city", "sport", "culture"][i % 4],
                      "summary": "A short summary of the story that the app shows in its list view."})
    return json.dumps({"version": version, "items": items}, separators=(",", ":")).encode()


async def items(request: Request) -> Response:
    return Response(items_document(), media_type="application/json",
                    headers={"Cache-Control": "max-age=60", "ETag": '"items-1"'})


async def items_version(request: Request) -> Response:
    n = int(request.path_params["n"])
    return Response(items_document(n), media_type="application/json",
                    headers={"Cache-Control": "max-age=60", "ETag": f'"items-{n}"'})


async def echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse({
        "method": request.method,
        "path": request.url.path,
        "query": request.url.query,
        "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in request.scope["headers"]],
        "body_length": len(body),
        "body_sha256": hashlib.sha256(body).hexdigest(),
        "body": body.decode("latin-1") if len(body) <= 4096 else None,
        "client": request.client.host if request.client else None,
    })


async def slow(request: Request) -> Response:
    ms = int(request.query_params.get("ms", "1000"))
    await asyncio.sleep(ms / 1000)
    return PlainTextResponse(f"slept {ms} ms\n")


def pattern_chunk(offset: int, size: int) -> bytes:
    """Bytes offset..offset+size of the /api/big stream (a repeating, checkable pattern)."""
    line = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ+/\n"  # 65 bytes
    start = offset % len(line)
    reps = (start + size) // len(line) + 2
    return (line * reps)[start:start + size]


async def big(request: Request) -> Response:
    total = int(request.query_params.get("bytes", str(1 << 20)))
    piece = 64 << 10

    async def produce():
        sent = 0
        while sent < total:
            n = min(piece, total - sent)
            yield pattern_chunk(sent, n)
            sent += n

    headers = {"Content-Length": str(total)} if request.query_params.get("length") == "1" else {}
    return StreamingResponse(produce(), media_type="application/octet-stream", headers=headers)


async def gzipped(request: Request) -> Response:
    body = items_document(2)
    headers = {"Cache-Control": "max-age=60", "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        headers["ETag"] = '"gzip-2-gz"'
        return Response(gzip.compress(body, mtime=0), media_type="application/json", headers=headers)
    headers["ETag"] = '"gzip-2"'
    return Response(body, media_type="application/json", headers=headers)


async def notransform(request: Request) -> Response:
    return Response(items_document(3), media_type="application/json",
                    headers={"Cache-Control": "max-age=60, no-transform", "ETag": '"nt-3"'})


async def hop(request: Request) -> Response:
    return Response(b"hop-by-hop test\n", media_type="text/plain", headers={
        "Connection": "X-Private-Hop, keep-alive",
        "X-Private-Hop": "must not reach the client",
        "Keep-Alive": "timeout=5",
        "Proxy-Authenticate": "Basic realm=upstream",
        "Upgrade": "h2c",
        "X-End-To-End": "kept",
    })


async def me(request: Request) -> Response:
    auth = request.headers.get("authorization", "")
    digest = hashlib.sha256(auth.encode()).hexdigest()
    # Same length for every user, same ETag and fields: only the bytes differ.
    document = {"user": digest[:16], "secret": digest, "messages": [
        {"id": i, "text": f"private message {i} for {digest[:16]}"} for i in range(12)]}
    return Response(json.dumps(document, separators=(",", ":")).encode(), media_type="application/json",
                    headers={"ETag": '"me-v1"', "Cache-Control": "private, max-age=60"})


async def truncate(request: Request) -> Response:
    total = int(request.query_params.get("bytes", "100000"))

    async def produce():
        yield pattern_chunk(0, total // 2)
        await asyncio.sleep(0.05)
        raise ConnectionAbortedError("example API closes mid-body on purpose")

    headers = {} if request.query_params.get("chunked") == "1" else {"Content-Length": str(total)}
    return StreamingResponse(produce(), media_type="application/octet-stream", headers=headers)


async def conn_count(request: Request) -> Response:
    return JSONResponse({"accepted": CONNECTIONS["accepted"]})


#: Live state: the number of articles in /latest_news, and each user's number of calendar events.
NEWS = {"articles": 30}
CALENDARS: dict[str, int] = {}


def news_document(count: int) -> bytes:
    """The feed with `count` articles, newest first; each update adds one article at the top."""
    articles = [{"id": n, "title": f"Article {n}: the council votes on the new tram line, part {n}",
                 "body": f"Reporters followed the debate for the {n}th time. " + "The vote is close and the city waits. " * 6,
                 "section": ["city", "world", "sport", "culture"][n % 4]}
                for n in range(count, 0, -1)]
    return json.dumps({"feed": "latest_news", "count": count, "articles": articles}, separators=(",", ":")).encode()


async def latest_news(request: Request) -> Response:
    return Response(news_document(NEWS["articles"]), media_type="application/json",
                    headers={"Cache-Control": "no-cache"})


async def latest_news_update(request: Request) -> Response:
    NEWS["articles"] += 1
    return JSONResponse({"articles": NEWS["articles"]})


def bearer(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    return auth[7:] if auth.lower().startswith("bearer ") and len(auth) > 7 else None


def calendar_document(user: str, events: int) -> bytes:
    """`user`'s calendar with `events` events (every user's events name the user)."""
    owner = hashlib.sha256(user.encode()).hexdigest()[:12]
    items = [{"id": n, "owner": owner, "title": f"Meeting {n} of {owner} with the planning team",
              "start": f"2026-12-{1 + n % 28:02d}T{8 + n % 9:02d}:00:00Z", "minutes": 30 + 15 * (n % 4),
              "notes": "Bring the quarterly figures and the draft of the tram line proposal."}
             for n in range(1, events + 1)]
    return json.dumps({"owner": owner, "events": items}, separators=(",", ":")).encode()


async def calendar(request: Request) -> Response:
    user = bearer(request)
    if user is None:
        return PlainTextResponse("bearer token required\n", status_code=401)
    events = CALENDARS.setdefault(user, 20)
    return Response(calendar_document(user, events), media_type="application/json",
                    headers={"Cache-Control": "private, no-cache"})


async def calendar_tagged(request: Request) -> Response:
    response = await calendar(request)
    user = bearer(request)
    if user is not None:
        response.headers["Dictionary-Partition"] = "user-" + hashlib.sha256(user.encode()).hexdigest()[:12]
    return response


async def calendar_owned(request: Request) -> Response:
    response = await calendar_tagged(request)
    if response.status_code == 200:
        response.headers["Cache-Control"] = "private, max-age=0, stale-while-revalidate=86400"
    return response


def profile_document(user: str, revision: str = "1") -> bytes:
    """`user`'s profile at `revision`: about 660 bytes of JSON naming the user."""
    owner = hashlib.sha256(user.encode()).hexdigest()
    return json.dumps({"owner": owner, "revision": revision[:16], "name": f"User {owner[:8]}", "locale": "en-GB", "timezone": "Europe/London",
                       "settings": {"theme": "dark", "digest": "daily", "notifications": ["mentions", "replies", "invites"]},
                       "about": f"Profile of {owner} for the retention test: " + "partitioned dictionaries. " * 12},
                      separators=(",", ":")).encode()


async def profile(request: Request) -> Response:
    user = bearer(request)
    if user is None:
        return PlainTextResponse("bearer token required\n", status_code=401)
    return Response(profile_document(user, request.query_params.get("rev", "1")), media_type="application/json",
                    headers={"Cache-Control": "private, no-cache"})


async def calendar_update(request: Request) -> Response:
    user = bearer(request)
    if user is None:
        return PlainTextResponse("bearer token required\n", status_code=401)
    CALENDARS[user] = CALENDARS.get(user, 20) + 1
    return JSONResponse({"events": CALENDARS[user]})


#: Chat users by bearer token, and the chats (id → participants and messages).
CHAT_USERS = {
    "alice": {"id": "u-alice", "name": "Alice Martin", "avatar": "https://cdn.example.com/avatars/u-alice.png",
              "status": "online", "timezone": "Europe/Paris"},
    "bob": {"id": "u-bob", "name": "Bob Okafor", "avatar": "https://cdn.example.com/avatars/u-bob.png",
            "status": "away", "timezone": "Africa/Lagos"},
    "carol": {"id": "u-carol", "name": "Carol Nguyen", "avatar": "https://cdn.example.com/avatars/u-carol.png",
              "status": "online", "timezone": "Asia/Ho_Chi_Minh"},
}
CHATS: dict[str, dict] = {}


def new_chat(a: str, b: str) -> str:
    chat = str(len(CHATS) + 1)
    CHATS[chat] = {"participants": [a, b], "messages": []}
    return chat


def add_message(chat: str, author: str, text: str) -> dict:
    messages = CHATS[chat]["messages"]
    n = len(messages) + 1
    seconds = 37 * n
    message = {"id": n, "chat": chat, "author": CHAT_USERS[author],
               "sent_at": f"2026-11-23T{9 + seconds // 3600 % 12:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}Z",
               "text": text, "edited": False, "reactions": [], "reply_to": n - 1 if n > 1 else None,
               "delivery": {"state": "delivered", "read_by": [p for p in CHATS[chat]["participants"] if p != author]}}
    messages.append(message)
    return message


for _a, _b, _lines in [("alice", "bob", ["Hi Bob, are we still on for the tram line review?", "Yes, Thursday at ten.",
                                         "Great, I will bring the quarterly figures."]),
                       ("alice", "carol", ["Carol, did you see the council agenda?", "Not yet, sending it now."]),
                       ("bob", "carol", ["Lunch tomorrow?", "Sure, the usual place at noon."])]:
    _chat = new_chat(_a, _b)
    for _i, _line in enumerate(_lines):
        add_message(_chat, _a if _i % 2 == 0 else _b, _line)


def chat_user(request: Request) -> str | None:
    user = bearer(request)
    return user if user in CHAT_USERS else None


async def chats(request: Request) -> Response:
    user = chat_user(request)
    if user is None:
        return PlainTextResponse("bearer token of a chat user required (alice, bob, carol)\n", status_code=401)
    if request.method == "POST":
        other = (await request.json()).get("with")
        if other not in CHAT_USERS or other == user:
            return PlainTextResponse("\"with\" must name another chat user\n", status_code=400)
        return JSONResponse({"chat": new_chat(user, other)}, status_code=201)
    mine = [{"id": c, "participants": [CHAT_USERS[p] for p in v["participants"]], "messages": len(v["messages"])}
            for c, v in CHATS.items() if user in v["participants"]]
    return JSONResponse({"chats": mine}, headers={"Cache-Control": "private, no-cache"})


async def chat_messages(request: Request) -> Response:
    user = chat_user(request)
    if user is None:
        return PlainTextResponse("bearer token of a chat user required (alice, bob, carol)\n", status_code=401)
    chat = request.path_params["chat"]
    if chat not in CHATS or user not in CHATS[chat]["participants"]:
        return PlainTextResponse("no such chat\n", status_code=404)
    if request.method == "POST":
        text = (await request.json()).get("text")
        if not isinstance(text, str) or not text:
            return PlainTextResponse("\"text\" must be a non-empty string\n", status_code=400)
        return JSONResponse(add_message(chat, user, text), status_code=201)
    try:
        since = int(request.query_params.get("since", "0"))
    except ValueError:
        return PlainTextResponse("since must be an integer\n", status_code=400)
    messages = CHATS[chat]["messages"]
    document = {"chat": {"id": chat, "participants": [CHAT_USERS[p] for p in CHATS[chat]["participants"]]},
                "since": since, "messages": messages[max(0, since):], "last": len(messages)}
    return Response(json.dumps(document, separators=(",", ":")).encode(), media_type="application/json",
                    headers={"Cache-Control": "private, no-cache"})


async def websocket_echo(websocket: WebSocket) -> None:
    """/api/ws: see the module's documentation."""
    if websocket.query_params.get("refuse"):
        await websocket.close()  # before accept: the upgrade is refused with 403
        return
    await websocket.accept()
    try:
        while True:
            message = await websocket.receive()
            if message["type"] == "websocket.disconnect":
                return
            if message.get("bytes") is not None:
                await websocket.send_bytes(message["bytes"])
                continue
            text = message.get("text") or ""
            words = text.split()
            if len(words) == 2 and words[0] == "big":
                n = int(words[1])
                await websocket.send_bytes((bytes(range(251)) * (n // 251 + 1))[:n])
            elif len(words) == 3 and words[0] == "flood":
                payload = b"f" * int(words[2])
                for _ in range(int(words[1])):
                    await websocket.send_bytes(payload)
            elif len(words) == 2 and words[0] == "close":
                await websocket.close(code=int(words[1]))
                return
            elif text == "headers":
                await websocket.send_text(json.dumps([[k.decode("latin-1"), v.decode("latin-1")]
                                                      for k, v in websocket.scope["headers"]]))
            else:
                await websocket.send_text(text)
    except WebSocketDisconnect:
        return


app = Starlette(routes=[
    WebSocketRoute("/api/ws", websocket_echo),
    Route("/api/chats", chats, methods=["GET", "POST"]),
    Route("/api/chats/{chat}/messages", chat_messages, methods=["GET", "POST"]),
    Route("/latest_news", latest_news),
    Route("/latest_news/update", latest_news_update, methods=["POST"]),
    Route("/api/calendar", calendar),
    Route("/api/calendar/update", calendar_update, methods=["POST"]),
    Route("/api/calendar-tagged", calendar_tagged),
    Route("/api/calendar-owned", calendar_owned),
    Route("/api/profile", profile),
    Route("/api/items", items),
    Route("/api/items/{n:int}", items_version),
    Route("/api/echo", echo, methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]),
    Route("/api/slow", slow),
    Route("/api/big", big),
    Route("/api/gzip", gzipped),
    Route("/api/notransform", notransform),
    Route("/api/hop", hop),
    Route("/api/me", me),
    Route("/api/truncate", truncate),
    Route("/api/conn-count", conn_count),
])


class EveryMethod:
    """ASGI wrapper answering what Starlette's routes cannot express: `/api/any/...` for every method
    token (routes list their methods, upper-cased), `OPTIONS *` (Starlette has no route for `*`), and
    `TRACE` anywhere. Everything else, WebSocket and lifespan scopes included, goes to `inner`."""

    def __init__(self, inner):
        self.inner = inner

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.inner(scope, receive, send)
        method, path = scope["method"], scope["path"]
        if method == "TRACE":
            return await self.reflect(scope, receive, send)
        if path == "*" or path.startswith("/api/any/"):
            return await self.echo(scope, receive, send)
        return await self.inner(scope, receive, send)

    @staticmethod
    async def body(receive) -> bytes:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                return body

    @staticmethod
    async def answer(send, status: int, content_type: bytes, payload: bytes, extra=()) -> None:
        headers = [(b"content-type", content_type), (b"content-length", str(len(payload)).encode()), *extra]
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def echo(self, scope, receive, send) -> None:
        body = await self.body(receive)
        target = scope["raw_path"].decode("latin-1") + ("?" + scope["query_string"].decode("latin-1")
                                                        if scope["query_string"] else "")
        payload = json.dumps({
            "method": scope["method"], "target": target,
            "headers": [[k.decode("latin-1"), v.decode("latin-1")] for k, v in scope["headers"]],
            "body": body.decode("latin-1"),
        }).encode()
        extra = [(b"allow", b"GET, HEAD, POST, OPTIONS, PROPFIND, QUERY")] if scope["method"] == "OPTIONS" else []
        await self.answer(send, 200, b"application/json", payload, extra)

    async def reflect(self, scope, receive, send) -> None:
        await self.body(receive)
        target = scope["raw_path"] + (b"?" + scope["query_string"] if scope["query_string"] else b"")
        head = b"TRACE " + target + b" HTTP/" + scope["http_version"].encode() + b"\r\n"
        head += b"".join(k + b": " + v + b"\r\n" for k, v in scope["headers"]) + b"\r\n"
        await self.answer(send, 200, b"message/http", head)


app = EveryMethod(app)
