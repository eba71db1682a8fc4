//! Which statements the proxy recognizes, and which it reports as not recorded.

use super::*;

fn t() -> Vec<TableSpec> {
    vec![TableSpec {
        name: "accounts".into(),
        pk: "id".into(),
        cols: vec!["id".into(), "balance".into(), "owner".into()],
    }]
}
fn c(v: &str) -> Operand {
    Operand::Const(Some(v.as_bytes().to_vec()))
}

#[test]
fn statements_by_primary_key_are_recognized() {
    let tb = t();
    assert_eq!(classify("BEGIN", &tb), Stmt::Begin);
    assert_eq!(
        classify("start transaction isolation level serializable", &tb),
        Stmt::Begin
    );
    assert_eq!(classify("COMMIT;", &tb), Stmt::Commit);
    assert_eq!(classify("ROLLBACK", &tb), Stmt::Rollback);
    assert_eq!(
        classify(
            "SELECT balance FROM public.accounts WHERE id = $1 FOR UPDATE",
            &tb
        ),
        Stmt::Select {
            table: 0,
            key: Operand::Param(0)
        }
    );
    assert_eq!(
        classify(
            "update accounts set balance = '90', owner = $2 where id = 7",
            &tb
        ),
        Stmt::Write {
            table: 0,
            key: c("7"),
            cols: vec![
                ("balance".into(), c("90")),
                ("owner".into(), Operand::Param(1))
            ],
            update: true
        }
    );
    assert_eq!(
        classify(
            "INSERT INTO accounts (id, balance) VALUES ($1, 'it''s') ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance",
            &tb
        ),
        Stmt::Write { table: 0, key: Operand::Param(0), cols: vec![("balance".into(), c("it's"))], update: false }
    );
    assert_eq!(
        classify_all(
            "BEGIN; UPDATE accounts SET balance = '1;2' WHERE id = 3; -- x;y\nCOMMIT;",
            &tb
        ),
        [
            Stmt::Begin,
            Stmt::Write {
                table: 0,
                key: c("3"),
                cols: vec![("balance".into(), c("1;2"))],
                update: true
            },
            Stmt::Commit
        ]
    );
    assert_eq!(
        classify(
            "select id, balance from accounts where id in (1, $2, '3') for share",
            &tb
        ),
        Stmt::SelectIn {
            table: 0,
            keys: vec![c("1"), Operand::Param(1), c("3")]
        }
    );
    assert_eq!(
        classify("SELECT * FROM accounts WHERE id IN (7)", &tb),
        Stmt::Select {
            table: 0,
            key: c("7")
        }
    );
    assert_eq!(
        classify(
            "INSERT INTO accounts (balance, id) VALUES ('5', 1), ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance",
            &tb
        ),
        Stmt::InsertRows {
            table: 0,
            rows: vec![
                (c("1"), vec![("balance".into(), c("5"))]),
                (Operand::Param(1), vec![("balance".into(), Operand::Param(0))]),
            ]
        }
    );
    assert_eq!(
        classify("UPDATE accounts SET balance = $1 WHERE id IN ($2, 4)", &tb),
        Stmt::UpdateIn {
            table: 0,
            keys: vec![Operand::Param(1), c("4")],
            cols: vec![("balance".into(), Operand::Param(0))]
        }
    );
    assert_eq!(
        classify("delete from accounts where id in (1, 2)", &tb),
        Stmt::DeleteIn {
            table: 0,
            keys: vec![c("1"), c("2")]
        }
    );
    // An increment by a list of keys: each row's new value comes back with its key.
    assert_eq!(
        classify(
            "UPDATE accounts SET balance = balance - 1 WHERE id IN (1, $1)",
            &tb
        ),
        Stmt::Increment {
            table: 0,
            keys: vec![c("1"), Operand::Param(0)],
            col: "balance".into(),
            delta: c("1"),
            minus: true
        }
    );
    // A tuple of another width is not an INSERT the proxy can read.
    assert!(matches!(
        classify(
            "INSERT INTO accounts (id, balance) VALUES (1, '5'), (2)",
            &tb
        ),
        Stmt::Unrecorded(_)
    ));
    assert!(matches!(
        classify("SELECT balance FROM accounts WHERE id IN (SELECT 1)", &tb),
        Stmt::UnrecordedRead(_)
    ));
    assert_eq!(classify_all("COMMIT", &tb), [Stmt::Commit]);
    assert_eq!(classify("SET search_path TO x", &tb), Stmt::Ignored);
    assert_eq!(classify("SAVEPOINT s1", &tb), Stmt::Savepoint("s1".into()));
    assert_eq!(
        classify("ROLLBACK TO SAVEPOINT \"S2\";", &tb),
        Stmt::RollbackTo("S2".into())
    );
    assert_eq!(
        classify("rollback work to s1", &tb),
        Stmt::RollbackTo("s1".into())
    );
    assert_eq!(
        classify("RELEASE SAVEPOINT s1", &tb),
        Stmt::Release("s1".into())
    );
    assert_eq!(classify("release s1", &tb), Stmt::Release("s1".into()));
    assert_eq!(classify("vacuum accounts", &tb), Stmt::Ignored);
    assert!(matches!(
        classify("select count(*) from accounts", &tb),
        Stmt::UnrecordedRead(_)
    ));
    assert_eq!(
        classify("DELETE FROM accounts WHERE id = 2", &tb),
        Stmt::Delete {
            table: 0,
            key: c("2")
        }
    );
    assert_eq!(
        classify("delete from accounts where id = $1;", &tb),
        Stmt::Delete {
            table: 0,
            key: Operand::Param(0)
        }
    );
    assert!(matches!(
        classify("DELETE FROM accounts WHERE balance = 2", &tb),
        Stmt::Unrecorded(_)
    ));
    assert_eq!(classify("SELECT 1", &tb), Stmt::Ignored);
    assert_eq!(
        classify(
            "UPDATE accounts SET balance = balance + -3412 WHERE id = 17;",
            &tb
        ),
        Stmt::Increment {
            table: 0,
            keys: vec![c("17")],
            col: "balance".into(),
            delta: c("-3412"),
            minus: false
        }
    );
    for unrecorded in [
        "UPDATE accounts SET balance = balance * 2 WHERE id = 1",
        "UPDATE accounts SET balance = balance + 1, owner = 'x' WHERE id = 1",
        "DELETE FROM accounts WHERE id > 1",
        "SELECT * FROM accounts WHERE balance > 3",
        "SELECT sum(balance) FROM accounts WHERE id = 1",
        "DELETE FROM accounts WHERE id = 2 RETURNING balance",
        "INSERT INTO accounts (id, balance) VALUES (1, '2') ON CONFLICT DO NOTHING",
    ] {
        assert!(
            matches!(
                classify(unrecorded, &tb),
                Stmt::Unrecorded(_) | Stmt::UnrecordedRead(_)
            ),
            "{unrecorded}"
        );
    }
}
