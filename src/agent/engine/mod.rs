//! The turn engine (ACP §6): the turn loop, one tool call start to end,
//! compaction, the relay of streamed text, and the text the model reads.
pub(super) mod compact;
pub(super) mod model_call;
pub mod model_text;
pub(super) mod named_files;
pub(super) mod nudges;
pub(super) mod relay;
pub(super) mod repeats;
pub(super) mod sampling;
pub(super) mod tool_call;
pub(super) mod turn;
