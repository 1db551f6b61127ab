"""The official ACP Python SDK's remote client against `acp-coder serve`
(tests/suite/serve.rs, issue 46 item 3).

    python client.py http|ws URL WORKDIR

One scenario: initialize, session/new, a tool-using turn with a permission
request (answered allow-once), a second turn cancelled with session/cancel
while it streams, then a disconnect, a new connection and session/load of
the session (its history replayed). Prints one JSON object: what happened,
and every frame each connection sent and received (the Rust test checks them
against the ACP schema).
"""
import asyncio
import json
import sys

import acp
from acp import text_block
from acp.http import create_http_stream
from acp.schema import AllowedOutcome, RequestPermissionResponse
from acp.ws import create_websocket_stream


class Recorder:
    """A transport that keeps every frame it carries, in order."""

    def __init__(self, inner, log):
        self.inner = inner
        self.log = log

    async def send(self, message):
        self.log.append({"dir": "out", "msg": message})
        await self.inner.send(message)

    async def receive(self):
        message = await self.inner.receive()
        if message is not None:
            self.log.append({"dir": "in", "msg": message})
        return message

    async def close(self):
        await self.inner.close()


class Client:
    def __init__(self):
        self.updates = []
        self.permissions = 0
        self.streaming = asyncio.Event()
        self.watching = False

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        self.permissions += 1
        allow = next(o for o in options if o.kind == "allow_once")
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=allow.option_id))

    async def session_update(self, session_id, update, **kwargs):
        kind = update.session_update
        text = getattr(getattr(update, "content", None), "text", None)
        self.updates.append({"kind": kind, "text": text})
        if kind == "agent_message_chunk" and self.watching:
            self.streaming.set()

    def on_connect(self, conn):
        pass


async def connect(kind, url, log):
    if kind == "http":
        transport = create_http_stream(url)
    else:
        transport = await create_websocket_stream(url.replace("http://", "ws://", 1))
    recorder = Recorder(transport, log)
    client = Client()
    conn = acp.connect_to_agent(client, recorder)
    await conn.initialize(protocol_version=1)
    return conn, client, recorder


async def main():
    kind, url, workdir = sys.argv[1], sys.argv[2], sys.argv[3]
    first_log, second_log = [], []
    out = {}
    conn, client, transport = await connect(kind, url, first_log)
    session = await conn.new_session(cwd=workdir)
    sid = session.session_id
    out["sessionId"] = sid
    done = await conn.prompt(session_id=sid, prompt=[text_block("write a.txt")])
    out["first"] = done.stop_reason
    out["permissions"] = client.permissions
    out["toolUpdates"] = sum(1 for u in client.updates if u["kind"] in ("tool_call", "tool_call_update"))
    client.watching = True
    turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("go slowly")]))
    await asyncio.wait_for(client.streaming.wait(), 30)
    await conn.cancel(session_id=sid)
    out["second"] = (await asyncio.wait_for(turn, 30)).stop_reason
    await transport.close()

    conn, client, transport = await connect(kind, url, second_log)
    await conn.load_session(cwd=workdir, session_id=sid)
    # Replayed updates may trail the answer on another stream: wait for them.
    for _ in range(200):
        if any(u["kind"] == "user_message_chunk" for u in client.updates):
            break
        await asyncio.sleep(0.05)
    out["replayed"] = [u for u in client.updates if u["kind"] == "user_message_chunk"]
    await transport.close()
    out["transcripts"] = [first_log, second_log]
    print(json.dumps(out))


asyncio.run(main())
