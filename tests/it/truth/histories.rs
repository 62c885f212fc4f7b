//! Random histories: recorders with random scopes starting, stopping and dying,
//! users writing, the server compacting its history, in an order drawn from a
//! seed (the same seed, the same history).

use proptest::prelude::Rng as _;
use proptest::test_runner::{RngAlgorithm, TestRng};
use std::collections::BTreeSet;

pub const NAMESPACES: [&str; 2] = ["shop", "pay"];
pub const NAMES: [&str; 3] = ["a", "b", "c"];
/// The label the selectors look at, and its values.
pub const TIERS: [&str; 2] = ["web", "db"];
pub const SELECTOR: &str = "tier=web";
pub const USERS: [&str; 3] = ["alice@example.com", "bob@example.com", "ci-deployer"];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    ConfigMap,
    Deployment,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::ConfigMap, Kind::Deployment];

    pub fn name(self) -> &'static str {
        match self {
            Kind::ConfigMap => "ConfigMap",
            Kind::Deployment => "Deployment",
        }
    }

    pub fn api_version(self) -> &'static str {
        match self {
            Kind::ConfigMap => "v1",
            Kind::Deployment => "apps/v1",
        }
    }

    /// What `record` takes.
    pub fn arg(self) -> &'static str {
        match self {
            Kind::ConfigMap => "cm",
            Kind::Deployment => "deploy",
        }
    }

    /// The stream name's resource part.
    pub fn stream(self) -> &'static str {
        match self {
            Kind::ConfigMap => "configmaps.v1",
            Kind::Deployment => "deployments.v1.apps",
        }
    }

    /// As `TYPE/NAME` takes it.
    pub fn singular(self) -> &'static str {
        match self {
            Kind::ConfigMap => "configmap",
            Kind::Deployment => "deployment",
        }
    }
}

/// One object by identity (its uid changes when it is re-created).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub kind: Kind,
    pub namespace: &'static str,
    pub name: &'static str,
}

/// What one recorder records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scope {
    /// Which of the history's journals.
    pub journal: usize,
    /// `None`: `-A`.
    pub namespace: Option<&'static str>,
    pub selector: bool,
    pub kinds: Vec<Kind>,
    /// `--retain`: the recorder prunes behind itself.
    pub retain: Option<&'static str>,
}

impl Scope {
    pub fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = self.kinds.iter().map(|k| k.arg().to_string()).collect();
        match self.namespace {
            Some(ns) => args.extend(["-n".into(), ns.into()]),
            None => args.push("-A".into()),
        }
        if self.selector {
            args.extend(["-l".into(), SELECTOR.into()]);
        }
        if let Some(retain) = self.retain {
            args.extend(["--retain".into(), retain.into()]);
        }
        args
    }

    /// The stream of `kind` this recorder records, by name.
    pub fn stream(&self, kind: Kind) -> String {
        format!(
            "{}@{}{}",
            kind.stream(),
            self.namespace.unwrap_or("*"),
            if self.selector {
                format!("?{SELECTOR}")
            } else {
                String::new()
            }
        )
    }

    /// Whether it records objects of `key`'s kind and namespace.
    pub fn holds(&self, key: &Key) -> bool {
        self.kinds.contains(&key.kind) && self.namespace.is_none_or(|ns| ns == key.namespace)
    }

    /// Whether two recorders of one journal would record one stream (krply
    /// refuses the second).
    pub fn clashes(&self, other: &Scope) -> bool {
        self.journal == other.journal
            && self.namespace == other.namespace
            && self.selector == other.selector
            && self.kinds.iter().any(|k| other.kinds.contains(k))
    }
}

/// A write, as a user makes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Create {
        tier: &'static str,
    },
    /// A new value for one data key (ConfigMap) or the replica count
    /// (Deployment), through a full update.
    Update,
    /// The `tier` label changes: the object enters or leaves the selector.
    Relabel {
        tier: &'static str,
    },
    Delete,
    /// A controller's write of what the server owns (the Deployment
    /// revision annotation): a new version that a default `diff` or `log`
    /// does not show (status-only). Only in histories from [`TOUCHING_FROM`].
    Touch,
}

/// The first seed whose histories have [`Op::Touch`] writes too. Earlier
/// seeds (and every kept one) stay as they were.
pub const TOUCHING_FROM: u64 = 1_000_000;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Start {
        slot: usize,
        scope: Scope,
    },
    /// SIGINT: a clean stop (exit 0).
    Stop {
        slot: usize,
    },
    /// SIGKILL.
    Kill {
        slot: usize,
    },
    /// SIGSTOP: the recorder is frozen (Ctrl-Z, a suspended laptop) and
    /// watches nothing until it is thawed.
    Freeze {
        slot: usize,
    },
    /// SIGCONT, once the freeze has lasted longer than the recorder's freeze
    /// limit: it records a gap and relists.
    Thaw {
        slot: usize,
    },
    Write {
        key: Key,
        op: Op,
        user: usize,
    },
    /// The server forgets its watch history and expires every open watch:
    /// a 410, a gap and a relist in every running recorder.
    Compact,
    /// A quiet moment questions may name.
    Mark,
}

/// How many recorders may run at once.
pub const SLOTS: usize = 3;

/// A history: its seed and its steps. The last step is a mark, after which
/// every recorder is stopped.
#[derive(Debug, Clone)]
pub struct History {
    pub seed: u64,
    pub steps: Vec<Step>,
    /// The size of the zones its recorders write, as low bits of `seq`
    /// (`KRPLY_DEBUG_ZONE_BITS`); `None`: the product's. A history writes a
    /// few hundred records, so only zones of a few records make its windows
    /// begin and end inside zones and span several.
    pub zone_bits: Option<u32>,
    /// How the server's audit log is imported into each journal.
    pub audit_pieces: AuditPieces,
    /// How old records are before a running recorder folds them into blocks
    /// behind itself, in milliseconds (`KRPLY_DEBUG_FOLD_AFTER_MS`); `None`:
    /// the product's ten minutes, which a history never lasts, so its
    /// recorders fold only when they stop.
    pub fold_after_ms: Option<u64>,
    /// Whether its recorders pack older versions as they write them, as
    /// recorders before blocks did (`KRPLY_DEBUG_PACK`): their journals must
    /// answer as the product's own do.
    pub pack_at_write: bool,
    /// The largest keyframe its recorders make again rather than a delta
    /// against, when they do not pack (`KRPLY_DEBUG_SMALL_KEYFRAME_BYTES`;
    /// docs/journal.md, "Small keyframes"): `Some(0)` as recorders before
    /// 2026-12-06 wrote, every changed version a delta when it is worth
    /// one; `None`: the product's, which makes most of a history's small
    /// objects' versions keyframes.
    pub small_keyframe_bytes: Option<usize>,
    /// How many records a replay may read per object of the stream before
    /// the state at a time is looked up object by object instead
    /// (`KRPLY_DEBUG_SEEK_RECORDS`); `None`: the product's, which on a
    /// history this small nearly always replays.
    pub seek_records: Option<i64>,
}

/// The server's audit log imported in `count` pieces (1: whole), each
/// overlapping the next by one line, so that their coverage joins without a
/// hole and that line is imported twice; the last piece first when
/// `reversed`. Each import merges its writes into the packs the ones before
/// made (docs/journal.md, "Audit packs").
/// `pack_writes`: the most writes of an object a pack holds
/// (`KRPLY_DEBUG_AUDIT_PACK_WRITES`); `None`: the product's. A history's
/// objects have a few writes each, so only packs of a few writes give them
/// several packs, which imports merge into and windows begin inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditPieces {
    pub count: usize,
    pub reversed: bool,
    pub pack_writes: Option<usize>,
}

impl AuditPieces {
    /// The whole log in one import, in the product's packs, as histories
    /// played before pieces.
    pub const WHOLE: AuditPieces = AuditPieces {
        count: 1,
        reversed: false,
        pack_writes: None,
    };
}

/// A seeded source of choices.
pub struct Rng(TestRng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        Rng(TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.0.next_u64() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    pub fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.below(from.len())]
    }
}

/// The history of `seed`.
pub fn history(seed: u64) -> History {
    let mut rng = Rng::new(seed);
    // Choices added later draw from their own sequence, so that every
    // earlier seed's history stays what it was.
    let mut later = Rng::new(seed ^ 0x7e7a_1e55_0000_0031);
    // Which updates are a controller's, from a generator of their own.
    let mut touches = (seed >= TOUCHING_FROM).then(|| Rng::new(seed ^ 0x70c4_e500));
    let mut steps = Vec::new();
    let mut running: [Option<Scope>; SLOTS] = [None, None, None];
    // Which objects exist, and their tier.
    let mut live: std::collections::BTreeMap<Key, &'static str> = Default::default();
    let length = 18 + rng.below(16);
    let mut since_mark = 0;
    for i in 0..length {
        let roll = rng.below(100);
        let free = running.iter().position(Option::is_none);
        let busy: Vec<usize> = (0..SLOTS).filter(|&s| running[s].is_some()).collect();
        // Most histories keep a recorder or two running, start and stop
        // them now and then, and lose watch history now and then.
        let step = if (i == 0 || roll < 12 || busy.is_empty() && roll < 30) && free.is_some() {
            let scope = scope(&mut rng, &mut later);
            if running.iter().flatten().any(|r| r.clashes(&scope)) {
                continue;
            }
            let slot = free.unwrap_or_default();
            running[slot] = Some(scope.clone());
            Step::Start { slot, scope }
        } else if roll < 20 && !busy.is_empty() {
            let slot = rng.pick(&busy);
            running[slot] = None;
            if rng.chance(40) {
                Step::Kill { slot }
            } else {
                Step::Stop { slot }
            }
        } else if roll < 25 && !busy.is_empty() {
            Step::Compact
        } else if roll < 40 && since_mark > 0 {
            since_mark = 0;
            Step::Mark
        } else {
            since_mark += 1;
            let key = Key {
                kind: rng.pick(&Kind::ALL),
                namespace: rng.pick(&NAMESPACES),
                name: rng.pick(&NAMES),
            };
            let user = rng.below(USERS.len());
            let op = match live.get(&key) {
                None => {
                    let tier = rng.pick(&TIERS);
                    live.insert(key.clone(), tier);
                    Op::Create { tier }
                }
                Some(&tier) => match rng.below(10) {
                    0..=5 if touches.as_mut().is_some_and(|t| t.chance(40)) => Op::Touch,
                    0..=5 => Op::Update,
                    6 | 7 => {
                        let other = if tier == TIERS[0] { TIERS[1] } else { TIERS[0] };
                        live.insert(key.clone(), other);
                        Op::Relabel { tier: other }
                    }
                    _ => {
                        live.remove(&key);
                        Op::Delete
                    }
                },
            };
            Step::Write { key, op, user }
        };
        steps.push(step);
    }
    steps.push(Step::Mark);
    freeze_one(seed, &mut steps);
    delete_unwatched(seed, &mut steps);
    // From a generator of its own, so that every seed's steps stay what they
    // were: a quarter keep the product's zones.
    let zone_bits = [None, Some(1), Some(2), Some(3)][Rng::new(seed ^ 0x0020_43e5).below(4)];
    // The same for the audit log's pieces: half import it whole.
    let mut pieces = Rng::new(seed ^ 0x00a0_d17e);
    let audit_pieces = AuditPieces {
        count: pieces.pick(&[1, 1, 2, 3]),
        reversed: pieces.chance(50),
        pack_writes: pieces.pick(&[None, Some(1), Some(2), Some(3)]),
    };
    // And for the way the state at a time is found: a third by object, a
    // third by replay, a third as the product chooses.
    let seek_records = [None, Some(1), Some(1_000_000)][Rng::new(seed ^ 0x0051_a7e5).below(3)];
    // And for folding behind the recorders: a quarter only at their stops.
    let fold_after_ms = [None, Some(0), Some(30), Some(300)][Rng::new(seed ^ 0x00f0_1d00).below(4)];
    // And for packing as recorders wrote before blocks: half.
    let pack_at_write = Rng::new(seed ^ 0x0000_9ac4).chance(50);
    // And for the keyframes made again by recorders that do not pack: half
    // as the product makes them, half never.
    let small_keyframe_bytes = [None, Some(0)][Rng::new(seed ^ 0x0005_3a11).below(2)];
    History {
        seed,
        steps,
        zone_bits,
        audit_pieces,
        fold_after_ms,
        pack_at_write,
        small_keyframe_bytes,
        seek_records,
    }
}

/// In about one history of eight, one running recorder is frozen for a few
/// steps and thawed before it stops. Chosen with a generator of its own, so
/// every other history (and every kept seed) stays as it was.
fn freeze_one(seed: u64, steps: &mut Vec<Step>) {
    let mut rng = Rng::new(seed ^ 0xf7ee_2e00);
    if !rng.chance(12) {
        return;
    }
    // Each slot's runs: from its start to its stop, kill, or the final mark.
    let mut runs: Vec<(usize, usize, usize)> = Vec::new();
    let mut open: [Option<usize>; SLOTS] = [None; SLOTS];
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Start { slot, .. } => open[*slot] = Some(i),
            Step::Stop { slot } | Step::Kill { slot } => {
                if let Some(a) = open[*slot].take() {
                    runs.push((*slot, a, i));
                }
            }
            _ => {}
        }
    }
    let last = steps.len() - 1;
    runs.extend((0..SLOTS).filter_map(|s| open[s].map(|a| (s, a, last))));
    // Room for a write or two while it is frozen.
    runs.retain(|&(_, a, b)| b - a >= 3);
    if runs.is_empty() {
        return;
    }
    let (slot, a, b) = runs[rng.below(runs.len())];
    let freeze = a + 1 + rng.below(b - a - 2);
    let thaw = freeze + 1 + rng.below(b - freeze - 1);
    steps.insert(thaw, Step::Thaw { slot });
    steps.insert(freeze, Step::Freeze { slot });
}

/// In about one history in four, a recorder that stopped or was killed is
/// started again right after an object it held was deleted: its relist must
/// find the object gone, and `log` say so (the rule "relist finds what went",
/// docs/truth.md). Chosen with a generator of its own, so every other
/// history stays as it was.
fn delete_unwatched(seed: u64, steps: &mut Vec<Step>) {
    let mut rng = Rng::new(seed ^ 0xde1e_7e00);
    if !rng.chance(25) {
        return;
    }
    let mut running: [Option<Scope>; SLOTS] = [None, None, None];
    let mut live: BTreeSet<Key> = BTreeSet::new();
    // Each place it could be: after the stop (or kill) at `i` of `slot`,
    // its scope, the object to delete, and the step before which the
    // recorder stops again (its slot taken, or its stream recorded by
    // another), if one comes.
    let mut places: Vec<(usize, usize, Scope, Key, Option<usize>)> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Start { slot, scope } => running[*slot] = Some(scope.clone()),
            Step::Stop { slot } | Step::Kill { slot } => {
                let Some(scope) = running[*slot].take() else {
                    continue;
                };
                let alone = running.iter().flatten().all(|r| !r.clashes(&scope));
                if scope.selector || !alone {
                    continue;
                }
                let later = &steps[i + 1..];
                let until = later
                    .iter()
                    .position(|s| {
                        matches!(s, Step::Start { slot: other, scope: theirs }
                            if other == slot || theirs.clashes(&scope))
                    })
                    .map(|j| i + 1 + j);
                for key in live.iter().filter(|k| scope.holds(k)) {
                    let written_later = later
                        .iter()
                        .any(|s| matches!(s, Step::Write { key: k, .. } if k == key));
                    if !written_later {
                        places.push((i, *slot, scope.clone(), key.clone(), until));
                    }
                }
            }
            Step::Write { key, op, .. } => match op {
                Op::Create { .. } => {
                    live.insert(key.clone());
                }
                Op::Delete => {
                    live.remove(key);
                }
                _ => {}
            },
            _ => {}
        }
    }
    if places.is_empty() {
        return;
    }
    let (i, slot, scope, key, until) = places.swap_remove(rng.below(places.len()));
    let user = rng.below(USERS.len());
    if let Some(j) = until {
        steps.insert(j, Step::Stop { slot });
    }
    steps.insert(i + 1, Step::Start { slot, scope });
    steps.insert(
        i + 1,
        Step::Write {
            key,
            op: Op::Delete,
            user,
        },
    );
}

fn scope(rng: &mut Rng, later: &mut Rng) -> Scope {
    let kinds = match rng.below(4) {
        0 => vec![Kind::ConfigMap],
        1 => vec![Kind::Deployment],
        _ => vec![Kind::ConfigMap, Kind::Deployment],
    };
    Scope {
        journal: if rng.chance(25) { 1 } else { 0 },
        namespace: match rng.below(5) {
            0 | 1 => None,
            2 | 3 => Some(NAMESPACES[0]),
            _ => Some(NAMESPACES[1]),
        },
        selector: rng.chance(15),
        kinds,
        retain: later.chance(25).then_some("1s"),
    }
}
