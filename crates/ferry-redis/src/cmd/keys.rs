//! STUB handlers: the real ones replace these.

use super::{Args, Ctx};
use crate::resp::ReplyBuf;

#[allow(missing_docs)]
pub fn del(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn exists(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn expire(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn keys(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn persist(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn pexpire(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn pttl(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn scan(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn ttl(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn type_(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
#[allow(missing_docs)]
pub fn unlink(_ctx: &mut Ctx<'_>, _args: &Args<'_>, _out: &mut ReplyBuf) { todo!() }
