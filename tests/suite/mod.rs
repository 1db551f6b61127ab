mod official_client;
mod sessions;
