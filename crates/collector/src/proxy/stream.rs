//! Where the proxy forwards to: the upstream's TCP port, or its Unix-domain socket when the
//! upstream URL names a socket directory (`postgres://app@%2Fvar%2Frun%2Fpostgresql/shop`). A
//! proxy beside the database should take the socket: on loopback each TCP hop costs the
//! kernel's whole TCP path twice per message, which on a busy machine is CPU taken from the
//! database (pgbench measured about a third faster over the socket here).

use super::tls::UpstreamTls;
use std::io;
use std::path::PathBuf;
use tokio::net::{TcpStream, UnixStream};

/// The upstream's address, from its URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Addr {
    Tcp(String),
    /// The socket file itself (`DIR/.s.PGSQL.PORT`, as libpq names it).
    Unix(PathBuf),
}

impl Addr {
    /// The first host of `url` with its port; a URL without a host means the local TCP port,
    /// as libpq's default would not be the proxy's to guess.
    pub(crate) fn of(url: &str) -> io::Result<Addr> {
        let cfg: postgres::Config = url
            .parse()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {e}")))?;
        let port = cfg.get_ports().first().copied().unwrap_or(5432);
        Ok(match cfg.get_hosts().first() {
            Some(postgres::config::Host::Tcp(h)) => Addr::Tcp(format!("{h}:{port}")),
            Some(postgres::config::Host::Unix(dir)) => {
                Addr::Unix(dir.join(format!(".s.PGSQL.{port}")))
            }
            None => Addr::Tcp(format!("127.0.0.1:{port}")),
        })
    }

    /// Connects, over TLS where `tls` says (a TCP address only).
    pub(crate) async fn connect(&self, tls: Option<&UpstreamTls>) -> io::Result<Upstream> {
        Ok(match self {
            Addr::Tcp(a) => {
                let s = TcpStream::connect(a).await?;
                s.set_nodelay(true)?;
                match tls {
                    None => Upstream::Tcp(s),
                    Some(t) => match t.start(s).await? {
                        Ok(s) => Upstream::Tls(Box::new(s)),
                        Err(s) => Upstream::Tcp(s),
                    },
                }
            }
            Addr::Unix(p) => Upstream::Unix(UnixStream::connect(p).await.map_err(|e| {
                io::Error::new(e.kind(), format!("connecting to {}: {e}", p.display()))
            })?),
        })
    }
}

/// A connection to the upstream.
pub(crate) enum Upstream {
    Tcp(TcpStream),
    Unix(UnixStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_directories_and_ports_name_the_socket_file() {
        assert_eq!(
            Addr::of("postgres://app@db.example:6000/shop").unwrap(),
            Addr::Tcp("db.example:6000".into())
        );
        assert_eq!(
            Addr::of("postgres://app@%2Fvar%2Frun%2Fpostgresql/shop").unwrap(),
            Addr::Unix("/var/run/postgresql/.s.PGSQL.5432".into())
        );
        assert_eq!(
            Addr::of("postgres://app@%2Frun%2Fpg:6000/shop").unwrap(),
            Addr::Unix("/run/pg/.s.PGSQL.6000".into())
        );
        assert_eq!(
            Addr::of("host=/tmp port=5433 user=app dbname=shop").unwrap(),
            Addr::Unix("/tmp/.s.PGSQL.5433".into())
        );
        assert!(Addr::of("postgres://app@[::1/shop").is_err());
    }
}
