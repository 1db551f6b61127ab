mod modes;
mod official_client;
mod permissions;
mod tools_command;
mod tools_common;
mod tools_files;
mod tools_search;
