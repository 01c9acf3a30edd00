//! `ferry decode`: Ferry wire bytes on standard input to protobuf-JSON on standard output.

use std::io::{Read, Write};

use ferry::wire::{Context, DecodeError, DynamicMessage, Limits, View};

use crate::schema::{CliError, SchemaArgs};
use ferry_reflect::json;

/// Options of `ferry decode`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    schema: SchemaArgs,
}

/// Reads all of standard input.
pub(crate) fn read_stdin() -> Result<Vec<u8>, CliError> {
    // Read no more than a message may be (the decoder's default limit), plus one byte to tell.
    let max = Limits::default().max_message_len;
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| CliError::Usage(format!("reading standard input: {e}")))?;
    if bytes.len() as u64 > max {
        return Err(CliError::Input(format!(
            "standard input exceeds the {max}-byte message limit"
        )));
    }
    Ok(bytes)
}

/// An invalid message: exit status 2, with the field path and byte offset.
pub(crate) fn invalid(e: DecodeError) -> CliError {
    CliError::Input(e.to_string())
}

/// Validates the message (default limits), then prints it as one line of canonical JSON.
pub fn run(args: &Args) -> Result<(), CliError> {
    let schema = args.schema.load()?;
    let loaded = args.schema.find(&schema)?;
    let bytes = read_stdin()?;
    let view = View::decode(&bytes, loaded.desc, &Limits::default()).map_err(invalid)?;
    let message = DynamicMessage::from_view(&view, Context::copy_only()).map_err(invalid)?;
    let mut text = String::new();
    json::to_json(&loaded.descriptor, &message, &mut text);
    text.push('\n');
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Usage(format!("writing standard output: {e}")))
}
