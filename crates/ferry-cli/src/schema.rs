//! The schema options shared by `encode`, `decode` and `inspect`, and the errors of those commands.

use std::path::PathBuf;

use ferry::wire::MessageDesc;
use ferry_reflect::Schema;
use prost_reflect::MessageDescriptor;

/// The .proto files of a command.
#[derive(clap::Args, Debug)]
pub struct ProtoFiles {
    /// A .proto file (repeatable). Its imports, including `google/protobuf/*.proto`, are
    /// resolved in the include directories.
    #[arg(long = "proto", value_name = "FILE", required = true)]
    pub protos: Vec<PathBuf>,
    /// A directory to search for the .proto files and their imports (repeatable).
    /// Default: the directory of each --proto file.
    #[arg(short = 'I', long = "include", value_name = "DIR")]
    pub includes: Vec<PathBuf>,
}

impl ProtoFiles {
    /// The include directories (given, or each file's directory), once the files exist.
    pub fn includes(&self) -> Result<Vec<PathBuf>, CliError> {
        for p in &self.protos {
            if !p.is_file() {
                return Err(CliError::Usage(format!("{}: no such file", p.display())));
            }
        }
        if !self.includes.is_empty() {
            return Ok(self.includes.clone());
        }
        let mut dirs: Vec<PathBuf> = Vec::new();
        for p in &self.protos {
            let dir = match p.parent() {
                Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                _ => PathBuf::from("."),
            };
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
        Ok(dirs)
    }
}

/// Where the message type comes from.
#[derive(clap::Args, Debug)]
pub struct SchemaArgs {
    #[command(flatten)]
    pub files: ProtoFiles,
    /// The message type, fully qualified: `package.Message` or `package.Outer.Inner`.
    #[arg(long, value_name = "NAME")]
    pub message: String,
}

/// A schema that does not load: a usage error (exit 1).
pub fn schema_error(e: impl std::fmt::Display) -> CliError {
    CliError::Usage(e.to_string())
}

/// A failed command, and how it exits.
#[derive(Debug)]
pub enum CliError {
    /// Bad options, a schema that does not load, an unknown message, an I/O failure: exit 1.
    Usage(String),
    /// Standard input is not a valid message (bytes or JSON): exit 2.
    Input(String),
}

impl CliError {
    /// The process exit status.
    pub fn exit_code(&self) -> u8 {
        match self {
            CliError::Usage(_) => 1,
            CliError::Input(_) => 2,
        }
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CliError::Usage(m) | CliError::Input(m) => f.write_str(m),
        }
    }
}

/// The message type a command works on, in a loaded schema (which owns its descriptors).
pub struct Loaded<'s> {
    /// The message's `prost_reflect` descriptor (names, JSON names, enums).
    pub descriptor: MessageDescriptor,
    /// The message's Ferry descriptor (what the encoder and validator use).
    pub desc: &'s MessageDesc<'s>,
}

impl SchemaArgs {
    /// Parses the files.
    pub fn load(&self) -> Result<Schema, CliError> {
        let includes = self.files.includes()?;
        Schema::load(&self.files.protos, &includes).map_err(schema_error)
    }

    /// Finds the message in `schema` (from [`load`](Self::load)).
    pub fn find<'s>(&self, schema: &'s Schema) -> Result<Loaded<'s>, CliError> {
        match (schema.descriptor(&self.message), schema.message(&self.message)) {
            (Some(descriptor), Some(desc)) => Ok(Loaded { descriptor, desc }),
            _ => Err(CliError::Usage(unknown_message(schema, &self.message))),
        }
    }
}

/// "unknown message", with the names the user may have meant.
fn unknown_message(schema: &Schema, name: &str) -> String {
    let mut msg = format!("unknown message `{name}`");
    let short = name.rsplit('.').next().unwrap_or(name);
    let user: Vec<String> = schema
        .pool()
        .all_messages()
        .filter(|m| !m.is_map_entry() && !m.full_name().starts_with("google.protobuf."))
        .map(|m| m.full_name().to_owned())
        .collect();
    let close: Vec<&String> = user
        .iter()
        .filter(|m| {
            m.rsplit('.')
                .next()
                .is_some_and(|s| s.eq_ignore_ascii_case(short))
        })
        .collect();
    if !close.is_empty() {
        let list: Vec<String> = close.iter().map(|m| format!("`{m}`")).collect();
        msg.push_str(&format!("; did you mean {}?", list.join(" or ")));
    } else if !user.is_empty() {
        const SHOWN: usize = 12;
        let list: Vec<&str> = user.iter().take(SHOWN).map(String::as_str).collect();
        msg.push_str(&format!("; the schema defines {}", list.join(", ")));
        if user.len() > SHOWN {
            msg.push_str(&format!(" and {} more", user.len() - SHOWN));
        }
    }
    msg.push_str(" (give the full name, with its package)");
    msg
}
