//! STUB
/// STUB
pub struct Server;
/// STUB
pub struct ServerHandle;
