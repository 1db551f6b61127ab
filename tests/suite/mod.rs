mod mcp;
mod official_client;
