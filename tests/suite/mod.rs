mod official_client;
