-- acp-coder as a CodeCompanion.nvim ACP adapter.
-- Put this in your CodeCompanion setup (or merge the `adapters.acp` part into it).
-- CodeCompanion advertises file access but no terminal, so acp-coder runs commands itself.
require("codecompanion").setup({
  adapters = {
    acp = {
      acp_coder = function()
        -- Start from a built-in ACP adapter to inherit its handlers, then point it at acp-coder.
        return require("codecompanion.adapters").extend("goose", {
          name = "acp_coder",
          formatted_name = "acp-coder",
          commands = {
            default = { "acp-coder" },
          },
          defaults = {
            auth_method = "openai-api-key",
            mcpServers = {},
            timeout = 20000,
          },
          env = {
            -- Empty: acp-coder uses the login saved by `acp-coder login`. Only to
            -- override it for this editor, add e.g. OPENAI_BASE_URL = "http://…/v1"
            -- or ACP_CODER_MODEL = "…" (a value naming a variable is read from your shell).
          },
        })
      end,
    },
  },
  interactions = {
    chat = {
      adapter = "acp_coder",
    },
  },
})
