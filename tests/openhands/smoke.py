"""OpenHands' ACPAgent drives acp-coder over stdio through one tool-using turn.

    python smoke.py ACP_CODER_BINARY WORKSPACE

The model endpoint comes from the environment (OPENAI_BASE_URL,
ACP_CODER_MODEL, OPENAI_API_KEY): ACPAgent passes its own environment to the
ACP server it starts. ACPAgent answers every permission request with the
first option offered. Prints one JSON line: {"ok": true, "events": N} once
the conversation has finished.
"""

import json
import sys

from openhands.sdk.agent import ACPAgent
from openhands.sdk.conversation import Conversation


def main(binary, workspace):
    agent = ACPAgent(acp_command=[binary], acp_startup_timeout=60.0, acp_prompt_timeout=120.0)
    try:
        conversation = Conversation(agent=agent, workspace=workspace)
        conversation.send_message("Create hello.txt saying hello from OpenHands.")
        conversation.run()
        events = len(list(conversation.state.events))
    finally:
        agent.close()
    print(json.dumps({"ok": True, "events": events}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
