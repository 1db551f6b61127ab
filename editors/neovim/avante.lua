-- acp-coder as an avante.nvim ACP provider.
-- avante.nvim starts agents with only PATH plus the `env` below, so pass HOME:
-- acp-coder finds the login saved by `acp-coder login` through it.
require("avante").setup({
  provider = "acp-coder",
  acp_providers = {
    ["acp-coder"] = {
      command = "acp-coder",
      args = {},
      env = {
        HOME = os.getenv("HOME"),
        -- Only to override the saved login for this editor, add e.g.
        -- OPENAI_BASE_URL = "http://127.0.0.1:11434/v1", ACP_CODER_MODEL = "qwen3-coder",
        -- OPENAI_API_KEY = os.getenv("OPENAI_API_KEY").
      },
    },
  },
})
