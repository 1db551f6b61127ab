mod cli_common;
mod cli_doctor;
mod cli_exec;
mod cli_login;
mod editors;
mod official_client;
mod trace;
