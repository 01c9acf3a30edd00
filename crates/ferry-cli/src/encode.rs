//! `ferry encode`: protobuf-JSON on standard input to Ferry wire bytes on standard output.

use std::io::{Read, Write};

use ferry::{Limits, Outgoing, View};

use crate::schema::{CliError, SchemaArgs};
use ferry_reflect::json;

/// Options of `ferry encode`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    schema: SchemaArgs,
}

/// Reads one JSON document, encodes it with every value copied (no pool: one gather entry).
pub fn run(args: &Args) -> Result<(), CliError> {
    let schema = args.schema.load()?;
    let loaded = args.schema.find(&schema)?;
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| CliError::Input(format!("reading standard input: {e}")))?;
    // Not serde_json::from_str: it keeps the last of a key given twice without a word.
    let doc = json::parse(&text).map_err(|e| CliError::Input(e.to_string()))?;
    let message = json::from_json(&loaded.descriptor, loaded.desc, &doc).map_err(|e| {
        CliError::Input(format!(
            "JSON does not fit `{}`: {e}",
            loaded.descriptor.full_name()
        ))
    })?;
    let bytes = message.to_vec().map_err(|e| CliError::Input(e.to_string()))?;
    // Never write what `ferry decode` would refuse (e.g. nesting past the default depth limit).
    View::decode(&bytes, loaded.desc, &Limits::default())
        .map_err(|e| CliError::Input(format!("the encoded message exceeds the decoder's limits: {e}")))?;
    let mut out = std::io::stdout().lock();
    out.write_all(&bytes)
        .and_then(|()| out.flush())
        .map_err(|e| CliError::Usage(format!("writing standard output: {e}")))
}
