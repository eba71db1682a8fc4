//! Which store a URL names: the one place that knows every backend, so each backend knows only
//! the `Store` and `Backend` traits.

use crate::mysql::MySql;
use crate::postgres::Postgres;
use crate::sqlite::Sqlite;
use crate::store::{Backend, Isolation, StoreError};

/// Parses `sqlite`, `sqlite:PATH`, `postgres://…`/`postgresql://…`, `mysql://…`/`mariadb://…`.
pub fn backend(spec: &str, isolation: Isolation) -> Result<Box<dyn Backend>, StoreError> {
    if spec == "sqlite" || spec.starts_with("sqlite:") {
        let path = spec
            .strip_prefix("sqlite:")
            .filter(|p| !p.is_empty())
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::env::temp_dir().join(format!("krait-{}.sqlite", std::process::id()))
            });
        return Ok(Box::new(Sqlite::new(path, isolation)?));
    }
    if spec.starts_with("postgres://") || spec.starts_with("postgresql://") {
        return Ok(Box::new(Postgres::new(spec, isolation)));
    }
    if spec.starts_with("mysql://") || spec.starts_with("mariadb://") {
        let url = spec.replacen("mariadb://", "mysql://", 1);
        return Ok(Box::new(MySql::new(&url, isolation)));
    }
    Err(StoreError::Fatal(format!(
        "unknown store {spec:?}: use sqlite[:PATH], postgres://USER@HOST:PORT/DB or mysql://USER@HOST:PORT/DB"
    )))
}
