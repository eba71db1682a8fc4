//! The CDCL engine against the brute-force oracle on thousands of random small instances.

use krait_solver::*;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_problem(r: &mut Rng) -> Problem {
    let n = 2 + r.below(9) as u32;
    let mut p = Problem::new(n);
    // A random DAG-ish set of known edges (sometimes cyclic on purpose).
    for _ in 0..r.below(n as u64 + 2) {
        let (a, b) = (r.below(n as u64) as u32, r.below(n as u64) as u32);
        if a != b && (a < b || r.below(10) == 0) {
            p.known_edges.push((a, b));
        }
    }
    let vars = 1 + r.below(10) as u32;
    for _ in 0..vars {
        let v = p.new_var();
        for pol in [true, false] {
            for _ in 0..1 + r.below(2) {
                let (a, b) = (r.below(n as u64) as u32, r.below(n as u64) as u32);
                if a != b {
                    p.lit_edges.push((Lit::new(v, pol), a, b));
                }
            }
        }
    }
    for _ in 0..r.below(4) {
        let c: Vec<Lit> = (0..1 + r.below(3))
            .map(|_| Lit::new(Var(r.below(vars as u64) as u32), r.below(2) == 0))
            .collect();
        p.clauses.push(c);
    }
    // Variables standing for two literals together (`¬a ∨ ¬b ∨ v`, with edges only when
    // true), half of them never decided, only implied (`Problem::implied_only`).
    for _ in 0..r.below(3) {
        let mut lit = || Lit::new(Var(r.below(vars as u64) as u32), r.below(2) == 0);
        let (a, b) = (lit(), lit());
        let v = p.new_var();
        p.clauses.push(vec![!a, !b, Lit::pos(v)]);
        let (x, y) = (r.below(n as u64) as u32, r.below(n as u64) as u32);
        if x != y {
            p.lit_edges.push((Lit::pos(v), x, y));
        }
        if r.below(2) == 0 {
            p.implied_only.push(v);
        }
    }
    p
}

fn check(p: &Problem, engine: &mut dyn Engine) -> bool {
    let truth = BruteForce::default().solve(p, &Budget::unlimited());
    let got = engine.solve(p, &Budget::unlimited());
    match (&truth, &got) {
        (Outcome::Sat { .. }, Outcome::Sat { model, order }) => {
            assert!(
                p.check_model(model),
                "{} gave a bad model for {p:?}",
                engine.name()
            );
            // The order must respect every present edge.
            let mut pos = vec![0; p.num_nodes as usize];
            for (i, &x) in order.iter().enumerate() {
                pos[x as usize] = i;
            }
            let val = |l: Lit| model[l.var().0 as usize] == l.is_pos();
            for &(u, v) in &p.known_edges {
                assert!(pos[u as usize] < pos[v as usize]);
            }
            for &(l, u, v) in &p.lit_edges {
                if val(l) {
                    assert!(pos[u as usize] < pos[v as usize]);
                }
            }
            true
        }
        (Outcome::Unsat { .. }, Outcome::Unsat { core }) => {
            let sub = p.restrict(core);
            assert!(
                matches!(
                    BruteForce::default().solve(&sub, &Budget::unlimited()),
                    Outcome::Unsat { .. }
                ),
                "core {core:?} is satisfiable for {p:?}"
            );
            false
        }
        _ => panic!(
            "{} disagrees with brute force on {p:?}: {truth:?} vs {got:?}",
            engine.name()
        ),
    }
}

#[test]
fn cdcl_agrees_with_brute_force() {
    let mut r = Rng(0x9e3779b97f4a7c15);
    let (mut sat, mut unsat) = (0, 0);
    for _ in 0..4000 {
        let p = random_problem(&mut r);
        for opts in [
            CdclOptions::default(),
            CdclOptions {
                two_cycle_clauses: true,
                ..Default::default()
            },
            CdclOptions {
                order_phase: false,
                theory_propagation: false,
                lazy_decisions: false,
                ..Default::default()
            },
            CdclOptions {
                order_phase: false,
                ..Default::default()
            },
            CdclOptions {
                lazy_decisions: false,
                ..Default::default()
            },
        ] {
            if check(&p, &mut Cdcl::new(opts)) {
                sat += 1;
            } else {
                unsat += 1;
            }
        }
    }
    // Both outcomes must be well represented for the comparison to mean anything.
    assert!(sat > 1000 && unsat > 1000, "sat {sat} unsat {unsat}");
}

#[test]
fn known_cycle_is_unsat_with_empty_core() {
    let mut p = Problem::new(3);
    p.known_edges = vec![(0, 1), (1, 2), (2, 0)];
    assert_eq!(
        Cdcl::default().solve(&p, &Budget::unlimited()),
        Outcome::Unsat { core: vec![] }
    );
}

#[test]
fn either_or_chooses_the_acyclic_side() {
    let mut p = Problem::new(3);
    p.known_edges = vec![(0, 1), (1, 2)];
    let v = p.add_choice(&[(2, 0)], &[(0, 2)]);
    match Cdcl::default().solve(&p, &Budget::unlimited()) {
        Outcome::Sat { model, order } => {
            assert!(!model[v.0 as usize]);
            assert_eq!(order, vec![0, 1, 2]);
        }
        o => panic!("{o:?}"),
    }
}

#[test]
fn budget_stops_a_hard_instance() {
    // Pigeonhole-like: many choices that all conflict pairwise in a long ring.
    let mut r = Rng(42);
    let mut p = Problem::new(60);
    for _ in 0..400 {
        let (a, b, c, d) = (
            r.below(60) as u32,
            r.below(60) as u32,
            r.below(60) as u32,
            r.below(60) as u32,
        );
        if a != b && c != d {
            p.add_choice(&[(a, b)], &[(c, d)]);
        }
    }
    let out = Cdcl::default().solve(&p, &Budget::unlimited().with_conflicts(1));
    assert!(matches!(
        out,
        Outcome::Unknown(StopReason::Conflicts) | Outcome::Sat { .. } | Outcome::Unsat { .. }
    ));
    let mut b = Budget::unlimited();
    b.interrupt_flag()
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let mut hard = p.clone();
    hard.clauses.push(vec![Lit::pos(Var(0)), Lit::pos(Var(1))]);
    let out = Cdcl::default().solve(&hard, &b);
    // Interrupted before the first conflict check, or finished without conflicts.
    assert!(!matches!(out, Outcome::Unknown(StopReason::Conflicts)));
}
