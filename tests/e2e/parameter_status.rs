//! ParameterStatus as PostgreSQL (14 and later) sends it: a reported parameter (TimeZone,
//! application_name, …) whose value changed during a cycle is reported once, right before
//! ReadyForQuery — after a SET, when a SET LOCAL ends with its transaction, when a ROLLBACK
//! undoes a SET, when an error fails a block (its settings are taken back then) — and not at
//! all when it ends where it began. Drivers keep these values
//! (pgjdbc reads timestamps in the reported TimeZone), so a missed report is a wrong answer
//! later. `TEST_AGAINST_PG=1` runs the same steps against PostgreSQL 15.

use tests::raw::{execute_unnamed, query, raw_session, read_reply, sync, Reply};
use tests::{timed, Backend};
use tokio::io::AsyncWriteExt;

/// The ParameterStatus messages of a reply, in order, and whether each came after the last
/// CommandComplete (PostgreSQL sends them just before ReadyForQuery).
fn reported(reply: &Reply) -> Vec<(String, String)> {
    let last_complete = reply.messages.iter().rposition(|m| m.tag == b'C');
    reply
        .messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.tag == b'S')
        .map(|(i, m)| {
            assert!(last_complete.is_none_or(|c| i > c), "ParameterStatus before a result");
            let mut parts = m.body.split(|b| *b == 0).map(|p| String::from_utf8_lossy(p).into());
            (parts.next().unwrap_or_default(), parts.next().unwrap_or_default())
        })
        .collect()
}

#[tokio::test]
async fn changed_parameters_are_reported_before_ready_for_query() {
    let Some(backend) = Backend::from_env() else { return };
    let mut s = timed("connect", raw_session(&backend)).await;
    let steps: &[(&str, &[(&str, &str)])] = &[
        ("SET TimeZone = 'Europe/Paris'", &[("TimeZone", "Europe/Paris")]),
        ("BEGIN; SET LOCAL TimeZone = 'UTC'", &[("TimeZone", "UTC")]),
        ("SELECT 1", &[]),
        ("COMMIT", &[("TimeZone", "Europe/Paris")]),
        ("BEGIN; SET application_name = 'tpcc'", &[("application_name", "tpcc")]),
        ("ROLLBACK", &[("application_name", "")]),
        ("SET TimeZone = 'UTC'; SET TimeZone = 'Europe/Paris'", &[]),
        ("SET application_name = 'a'; SET application_name = 'b'", &[("application_name", "b")]),
        // An error in a block takes the block's settings back at once: here to what the
        // client last heard, so nothing is reported.
        ("BEGIN; SET application_name = 'c'; SELECT 1/0", &[]),
        ("ROLLBACK", &[]),
        ("BEGIN; SET application_name = 'd'", &[("application_name", "d")]),
        ("SELECT 1/0", &[("application_name", "b")]),
        ("SHOW application_name", &[]),
        ("ROLLBACK", &[]),
        ("RESET application_name", &[("application_name", "")]),
        ("SELECT set_config('TimeZone', 'UTC', false)", &[("TimeZone", "UTC")]),
    ];
    for (sql, want) in steps {
        s.write_all(&query(sql)).await.expect("send");
        let reply = timed(sql, read_reply(&mut s, 0)).await;
        let want: Vec<(String, String)> =
            want.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
        assert_eq!(reported(&reply), want, "{sql} on {}", backend.name());
    }
    // The extended protocol: reported at the Sync's ReadyForQuery.
    let mut pipeline = execute_unnamed("SET TimeZone = 'Asia/Tokyo'");
    pipeline.extend(execute_unnamed("SELECT 1"));
    pipeline.extend(sync());
    s.write_all(&pipeline).await.expect("send");
    let reply = timed("pipeline", read_reply(&mut s, 0)).await;
    assert_eq!(reported(&reply), [("TimeZone".to_string(), "Asia/Tokyo".to_string())]);
}
