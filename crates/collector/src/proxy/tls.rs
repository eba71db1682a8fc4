//! TLS to the upstream database, as its URL's `sslmode` asks: a cloud database that accepts
//! only encrypted connections is reached through the proxy. The application still speaks
//! plaintext to the proxy beside it (the proxy must read the stream to record it); the hop
//! that leaves the machine is encrypted.
//!
//! The certificate is always verified, against the system's roots and any `--upstream-ca`
//! file, and must name the host the URL names. That is stricter than libpq's `require`, which
//! encrypts without verifying: a proxy that records a database's answers should know it is
//! talking to that database.

use std::io;
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};

/// PostgreSQL's SSLRequest: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// How to reach the upstream over TLS.
pub(crate) struct UpstreamTls {
    pub config: Arc<rustls::ClientConfig>,
    server: ServerName<'static>,
    /// `sslmode=require`: a server that refuses TLS is an error. Under `prefer` it is spoken to in plaintext.
    required: bool,
}

/// The `sslmode` a URL or key-value connection string names, if any.
fn sslmode(url: &str) -> Option<String> {
    let at = url.find("sslmode=")?;
    let rest = &url[at + "sslmode=".len()..];
    let end = rest.find(['&', ' ']).unwrap_or(rest.len());
    Some(rest[..end].to_ascii_lowercase())
}

impl UpstreamTls {
    /// TLS as `url` asks (None: `sslmode` absent, `disable` or `allow`), trusting the system's
    /// roots and the PEM certificates in `ca`.
    pub(crate) fn of(url: &str, ca: Option<&Path>) -> io::Result<Option<UpstreamTls>> {
        let bad = |m: String| io::Error::new(io::ErrorKind::InvalidInput, m);
        let required = match sslmode(url).as_deref() {
            None | Some("disable") | Some("allow") => return Ok(None),
            Some("prefer") => false,
            Some("require") => true,
            // The URL's parser knows only disable, prefer and require; require verifies here.
            Some("verify-ca") | Some("verify-full") => {
                return Err(bad(format!(
                    "{url}: use sslmode=require: the proxy always verifies the certificate and host"
                )))
            }
            Some(other) => return Err(bad(format!("{url}: unknown sslmode {other}"))),
        };
        let cfg: postgres::Config = url.parse().map_err(|e| bad(format!("{url}: {e}")))?;
        let host = match cfg.get_hosts().first() {
            Some(postgres::config::Host::Tcp(h)) => h.clone(),
            _ => return Err(bad(format!("{url}: sslmode needs a TCP host to verify"))),
        };
        let server = ServerName::try_from(host.clone())
            .map_err(|e| bad(format!("{url}: host {host}: {e}")))?;
        let mut roots = rustls::RootCertStore::empty();
        // Unreadable system roots are no error: a CA file may be all that is trusted.
        for c in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(c);
        }
        if let Some(ca) = ca {
            let pem = std::fs::read(ca)
                .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", ca.display())))?;
            let certs: Vec<CertificateDer<'static>> =
                rustls::pki_types::pem::PemObject::pem_slice_iter(&pem)
                    .collect::<Result<_, _>>()
                    .map_err(|e| bad(format!("{}: not PEM certificates: {e:?}", ca.display())))?;
            if certs.is_empty() {
                return Err(bad(format!("{}: no PEM certificate in it", ca.display())));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| bad(format!("{}: {e}", ca.display())))?;
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| bad(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Some(UpstreamTls {
            config: Arc::new(config),
            server,
            required,
        }))
    }

    /// Asks `tcp`'s server for TLS and shakes hands: Ok(Err(tcp)) where the server refused and
    /// plaintext is allowed.
    pub(crate) async fn start(
        &self,
        mut tcp: TcpStream,
    ) -> io::Result<Result<tokio_rustls::client::TlsStream<TcpStream>, TcpStream>> {
        tcp.write_all(&SSL_REQUEST).await?;
        let mut answer = [0u8; 1];
        tcp.read_exact(&mut answer).await?;
        match answer[0] {
            b'S' => {}
            b'N' if !self.required => return Ok(Err(tcp)),
            b'N' => {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    "the upstream refused TLS, which its URL's sslmode requires",
                ))
            }
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("the upstream answered the TLS request with {other:#04x}"),
                ))
            }
        }
        let connector = tokio_rustls::TlsConnector::from(self.config.clone());
        connector
            .connect(self.server.clone(), tcp)
            .await
            .map(Ok)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("TLS to the upstream: {e} (a private CA: --upstream-ca FILE)"),
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_is_read_from_urls_and_key_value_strings() {
        assert_eq!(sslmode("postgres://a@h/db"), None);
        assert_eq!(
            sslmode("postgres://a@h/db?application_name=x&sslmode=require&x=1").as_deref(),
            Some("require")
        );
        assert_eq!(
            sslmode("host=h sslmode=Verify-Full user=a").as_deref(),
            Some("verify-full")
        );
        assert!(UpstreamTls::of("postgres://a@h/db", None)
            .unwrap()
            .is_none());
        assert!(UpstreamTls::of("postgres://a@h/db?sslmode=disable", None)
            .unwrap()
            .is_none());
        assert!(UpstreamTls::of("postgres://a@h/db?sslmode=sometimes", None).is_err());
        assert!(UpstreamTls::of("postgres://a@h/db?sslmode=require", None)
            .unwrap()
            .is_some_and(|t| t.required));
        assert!(UpstreamTls::of(
            "postgres://a@h/db?sslmode=require",
            Some(Path::new("/nonexistent"))
        )
        .is_err());
    }
}
