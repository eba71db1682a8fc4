//! `--junit FILE`: the verdict as a JUnit XML report, the format CI systems (GitHub Actions,
//! GitLab, Jenkins) show as test results. One test suite, one test case per checked history:
//! passed on ACCEPT, failed on REJECT (with the certificate in words), errored on UNKNOWN.

use krait_checker::{Report, Verdict};
use krait_report::xml_escape as escape;
use std::path::Path;
use std::time::Duration;

/// The JUnit XML for one history's verdict (`None`: an online check that found nothing).
pub(crate) fn xml(history: &Path, level: &str, report: Option<&Report>, time: Duration) -> String {
    let name = escape(&format!("{} is {level}", history.display()));
    let secs = time.as_secs_f64();
    let (failures, errors, body) = match report.map(|r| &r.verdict) {
        None | Some(Verdict::Accept) => (0, 0, String::new()),
        Some(Verdict::Reject(c)) => {
            let text = krait_report::report_text(report.unwrap(), false);
            (
                1,
                0,
                format!(
                    "<failure message=\"{}\" type=\"{}\">{}</failure>",
                    escape(&c.summary),
                    escape(c.anomaly.name()),
                    escape(&text)
                ),
            )
        }
        Some(Verdict::Unknown { reason }) => (
            0,
            1,
            format!(
                "<error message=\"{}\" type=\"undecided\"></error>",
                escape(reason)
            ),
        ),
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"1\" failures=\"{failures}\" errors=\"{errors}\" time=\"{secs:.3}\">\n  <testsuite name=\"krait\" tests=\"1\" failures=\"{failures}\" errors=\"{errors}\" time=\"{secs:.3}\">\n    <testcase classname=\"krait.check\" name=\"{name}\" time=\"{secs:.3}\">{body}</testcase>\n  </testsuite>\n</testsuites>\n"
    )
}

/// Writes the report to `file`; a failure to write is an error (the user asked for the file).
pub(crate) fn write(
    file: &Path,
    history: &Path,
    level: &str,
    report: Option<&Report>,
    time: Duration,
) -> anyhow::Result<()> {
    std::fs::write(file, xml(history, level, report, time))
        .map_err(|e| anyhow::anyhow!("{}: cannot write the JUnit report: {e}", file.display()))
}
