"""Drives `acp-coder a2a` with the official A2A Python SDK (a2a-sdk 1.x).

Run by tests/suite/a2a.rs as `python client.py SCENARIO URL [ARGS...]` with
the bearer token in A2A_TOKEN; prints one JSON object on stdout for the
test to check (tasks and events in their protobuf JSON form).
"""

import asyncio
import json
import os
import sys

import httpx
from google.protobuf import json_format

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.helpers.proto_helpers import new_data_message, new_text_message
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
)


def as_json(msg):
    return json_format.MessageToDict(msg)


def user(text, context_id=None, task_id=None):
    return SendMessageRequest(
        message=new_text_message(
            text, context_id=context_id, task_id=task_id, role=Role.ROLE_USER
        )
    )


async def client_for(url, streaming=True, polling=False, version=None):
    http = httpx.AsyncClient(
        headers={"Authorization": "Bearer " + os.environ["A2A_TOKEN"]},
        timeout=60,
    )
    card = await A2ACardResolver(http, url).get_agent_card()
    if version:
        for iface in card.supported_interfaces:
            iface.protocol_version = version
    config = ClientConfig(streaming=streaming, polling=polling, httpx_client=http)
    return ClientFactory(config).create(card)


async def collect(client, request):
    """Every StreamResponse of one send, as JSON."""
    return [as_json(e) async for e in client.send_message(request)]


def last_task(events):
    for e in reversed(events):
        if "task" in e:
            return e["task"]
    return None


async def error_of(coro):
    try:
        await coro
    except A2AClientError as e:  # noqa: PERF203
        return {"type": type(e).__name__, "message": str(e)}
    except Exception as e:  # noqa: BLE001 (the SDK's A2AError types)
        return {"type": type(e).__name__, "message": str(e)}
    return None


async def main():
    scenario, url, *args = sys.argv[1:]
    out = {}
    if scenario == "blocking":
        client = await client_for(url, streaming=False)
        out["task"] = last_task(await collect(client, user(args[0])))
    elif scenario == "stream":
        client = await client_for(url, streaming=True)
        out["events"] = await collect(client, user(args[0]))
        out["task"] = as_json(
            await client.get_task(GetTaskRequest(id=out["events"][0]["task"]["id"]))
        )
    elif scenario == "ask":
        # A command needs permission: input-required, then the answer.
        client = await client_for(url, streaming=False)
        first = last_task(await collect(client, user(args[0])))
        out["asked"] = first
        answer = user(args[1], context_id=first["contextId"], task_id=first["id"])
        out["task"] = last_task(await collect(client, answer))
        out["again"] = await error_of(collect(client, answer))
    elif scenario == "ask_data":
        # The same, answered with a data part naming the option of kind args[1].
        client = await client_for(url, streaming=False)
        first = last_task(await collect(client, user(args[0])))
        out["asked"] = first
        data = next(p["data"] for p in first["status"]["message"]["parts"] if "data" in p)
        option = next(o for o in data["options"] if o["kind"] == args[1])
        answer = SendMessageRequest(
            message=new_data_message(
                {"optionId": option["optionId"]},
                context_id=first["contextId"],
                task_id=first["id"],
                role=Role.ROLE_USER,
            )
        )
        out["task"] = last_task(await collect(client, answer))
    elif scenario == "subscribe":
        # Started without waiting (polling), then followed with SubscribeToTask.
        starter = await client_for(url, streaming=False, polling=True)
        started = last_task(await collect(starter, user(args[0])))
        out["started"] = started
        client = await client_for(url, streaming=True)
        out["events"] = [
            as_json(e)
            async for e in client.subscribe(SubscribeToTaskRequest(id=started["id"]))
        ]
    elif scenario == "followup":
        client = await client_for(url, streaming=False)
        first = last_task(await collect(client, user(args[0])))
        second = last_task(
            await collect(client, user(args[1], context_id=first["contextId"]))
        )
        out["first"], out["second"] = first, second
        listed = await client.list_tasks(ListTasksRequest(context_id=first["contextId"]))
        out["listed"] = as_json(listed)
    elif scenario == "cancel":
        client = await client_for(url, streaming=False, polling=True)
        started = last_task(await collect(client, user(args[0])))
        out["started"] = started
        out["task"] = as_json(await client.cancel_task(CancelTaskRequest(id=started["id"])))
        out["again"] = await error_of(client.cancel_task(CancelTaskRequest(id=started["id"])))
    elif scenario == "errors":
        client = await client_for(url, streaming=False)
        out["unknown_task"] = await error_of(client.get_task(GetTaskRequest(id="nope")))
        out["unknown_cancel"] = await error_of(client.cancel_task(CancelTaskRequest(id="nope")))
        done = last_task(await collect(client, user(args[0])))
        out["finished_message"] = await error_of(
            collect(client, user("more", context_id=done["contextId"], task_id=done["id"]))
        )
        out["unknown_context"] = await error_of(
            collect(client, user("hi", context_id="no-such-context"))
        )
    elif scenario == "v03":
        client = await client_for(url, streaming=args[1] == "stream", version="0.3")
        events = await collect(client, user(args[0]))
        out["events"] = events
        task_id = next(
            e["task"]["id"] if "task" in e else e[k]["taskId"]
            for e in events
            for k in ("task", "statusUpdate", "artifactUpdate")
            if k in e
        )
        out["task"] = as_json(await client.get_task(GetTaskRequest(id=task_id)))
    else:
        raise SystemExit(f"unknown scenario {scenario}")
    print(json.dumps(out))


asyncio.run(main())
