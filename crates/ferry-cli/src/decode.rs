//! `ferry decode`: Ferry wire bytes on standard input to protobuf-JSON on standard output.

use std::io::{Read, Write};

use ferry::wire::layout::MAX_MESSAGE_LEN;
use ferry::wire::{Context, DecodeError, DecodeErrorKind, DynamicMessage, Limits, View};

use crate::schema::{CliError, SchemaArgs};
use ferry_reflect::json;

/// Options of `ferry decode`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    schema: SchemaArgs,
    #[command(flatten)]
    limits: LimitArgs,
}

/// The decoder's limits, as options of `ferry decode` and `ferry inspect`. The defaults are
/// `ferry_wire::Limits::default()`, what a program that calls `View::decode` gets.
#[derive(clap::Args, Debug)]
pub struct LimitArgs {
    /// Deepest nesting of messages accepted (the root is depth 0; at most 256).
    #[arg(
        long,
        value_name = "N",
        default_value_t = Limits::default().max_depth,
        value_parser = clap::value_parser!(u32).range(0..=i64::from(Limits::MAX_DEPTH)),
    )]
    max_depth: u32,
    /// Most fields and list elements accepted, counted over the whole message.
    #[arg(long, value_name = "N", default_value_t = Limits::default().max_elements)]
    max_elements: u64,
    /// Largest message accepted, in bytes (at most 4294967295, the format's own limit).
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = Limits::default().max_message_len,
        value_parser = clap::value_parser!(u64).range(0..=MAX_MESSAGE_LEN),
    )]
    max_len: u64,
}

impl LimitArgs {
    /// The limits the options give.
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            max_message_len: self.max_len,
            max_depth: self.max_depth,
            max_elements: self.max_elements,
        }
    }
}

/// Reads all of standard input, refusing more than `limits.max_message_len` bytes.
pub(crate) fn read_stdin(limits: &Limits) -> Result<Vec<u8>, CliError> {
    // Read no more than a message may be, plus one byte to tell.
    let max = limits.max_message_len;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::Usage(format!("reading standard input: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(CliError::Input(format!(
            "standard input exceeds the {max}-byte message limit (--max-len)"
        )));
    }
    Ok(bytes)
}

/// An invalid message: exit status 2, with the field path and byte offset, and for a limit
/// the option that sets it.
pub(crate) fn invalid(e: DecodeError) -> CliError {
    let option = match e.kind() {
        DecodeErrorKind::TooDeep { .. } => " (--max-depth)",
        DecodeErrorKind::TooManyElements { .. } => " (--max-elements)",
        DecodeErrorKind::MessageTooLarge { .. } => " (--max-len)",
        _ => "",
    };
    CliError::Input(format!("{e}{option}"))
}

/// Validates the message (within the limits of the options), then prints it as one line of
/// canonical JSON.
pub fn run(args: &Args) -> Result<(), CliError> {
    let schema = args.schema.load()?;
    let loaded = args.schema.find(&schema)?;
    let limits = args.limits.limits();
    let bytes = read_stdin(&limits)?;
    let view = View::decode(&bytes, loaded.desc, &limits).map_err(invalid)?;
    let message = DynamicMessage::from_view(&view, Context::copy_only()).map_err(invalid)?;
    let mut text = String::new();
    json::to_json(&loaded.descriptor, &message, &mut text);
    text.push('\n');
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Usage(format!("writing standard output: {e}")))
}
