//! The XDP program (`xdp-prog/redirect.c`, built object committed beside it): loaded with aya,
//! attached to the interface in native (driver) mode, or generic (SKB) mode if the driver
//! refuses, and detached when dropped.

use std::error::Error;
use std::os::fd::AsFd;

use aya::Ebpf;
use aya::maps::{Array, XskMap};
use aya::programs::{Xdp, XdpFlags};

use super::XdpError;

/// Bytes aligned for the ELF parser (`include_bytes!` alone gives byte alignment).
#[repr(C, align(8))]
struct Aligned<B: ?Sized>(B);

/// The compiled program (clang -target bpf; `xdp-prog/build.sh` rebuilds it).
static OBJECT: &Aligned<[u8]> = &Aligned(*include_bytes!("../../xdp-prog/redirect.o"));

/// The loaded, attached program; dropping it detaches it (aya's link goes with the `Ebpf`).
pub(crate) struct Program {
    _ebpf: Ebpf,
    native: bool,
}

fn step(what: &'static str) -> impl FnOnce(Box<dyn Error + Send + Sync>) -> XdpError {
    move |source| XdpError::Program { step: what, source }
}

impl Program {
    /// Loads the program, points it at `socket` for `queue` and at UDP port `port`, and
    /// attaches it to `ifname`: natively if `native` and the driver takes it, else generic.
    pub(crate) fn attach(
        ifname: &str,
        queue: u32,
        port: u16,
        socket: impl AsFd,
        native: bool,
    ) -> Result<Program, XdpError> {
        let mut ebpf = Ebpf::load(&OBJECT.0).map_err(|e| step("load the object")(e.into()))?;
        {
            let mut xsks = XskMap::try_from(
                ebpf.map_mut("xsks")
                    .ok_or_else(|| step("find map xsks")("missing".into()))?,
            )
            .map_err(|e| step("open map xsks")(e.into()))?;
            xsks.set(queue, socket.as_fd(), 0)
                .map_err(|e| step("put the socket in xsks")(e.into()))?;
            let mut ports: Array<_, u16> = Array::try_from(
                ebpf.map_mut("ports")
                    .ok_or_else(|| step("find map ports")("missing".into()))?,
            )
            .map_err(|e| step("open map ports")(e.into()))?;
            ports
                .set(0, port.to_be(), 0)
                .map_err(|e| step("set the port")(e.into()))?;
        }
        let prog: &mut Xdp = ebpf
            .program_mut("ferry_redirect")
            .ok_or_else(|| step("find the program")("missing".into()))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| step("find the program")(e.into()))?;
        prog.load().map_err(|e| step("verify the program")(e.into()))?;
        let native = native && prog.attach(ifname, XdpFlags::DRV_MODE).is_ok();
        if !native {
            prog.attach(ifname, XdpFlags::SKB_MODE)
                .map_err(|e| step("attach the program")(e.into()))?;
        }
        Ok(Program { _ebpf: ebpf, native })
    }

    /// Whether it runs in the driver (native XDP), else in the generic SKB path.
    pub(crate) fn native(&self) -> bool {
        self.native
    }
}
