-- acp-coder as an avante.nvim ACP provider.
-- avante.nvim starts agents with only PATH plus the `env` below, so pass HOME
-- (acp-coder finds its config file and log directory through it) and the key.
require("avante").setup({
  provider = "acp-coder",
  acp_providers = {
    ["acp-coder"] = {
      command = "acp-coder",
      args = {},
      env = {
        HOME = os.getenv("HOME"),
        OPENAI_API_KEY = os.getenv("OPENAI_API_KEY"),
        OPENAI_BASE_URL = "https://api.openai.com/v1",
        ACP_CODER_MODEL = "gpt-4.1",
      },
    },
  },
})
