//! The client-pushed series (KIP-714) as the broker exports them: Prometheus families of [`Sample`]s, each
//! series owned by the client instance that pushed it, bounded in number (`metrics.client.series.max`:
//! series beyond it are dropped and counted) and removed with their owner.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use uuid::Uuid;

use super::otlp::{Kind, Sample};

/// A series within a family: its name suffix and its labels (the broker's first, then the sample's).
type SeriesKey = (&'static str, Vec<(String, String)>);

#[derive(Debug, Default)]
struct Family {
    kind: Option<Kind>,
    series: BTreeMap<SeriesKey, f64>,
}

/// The exported series. Not thread-safe: held inside the manager's lock.
#[derive(Debug)]
pub struct SeriesStore {
    max: usize,
    families: BTreeMap<String, Family>,
    owners: HashMap<Uuid, HashSet<(String, SeriesKey)>>,
    count: usize,
    dropped: u64,
}

impl SeriesStore {
    /// An empty store holding at most `max` series.
    pub fn new(max: usize) -> SeriesStore {
        SeriesStore {
            max,
            families: BTreeMap::new(),
            owners: HashMap::new(),
            count: 0,
            dropped: 0,
        }
    }

    /// Records one push of `owner`: each sample's series (labels = `base` then the sample's, a sample label
    /// named like a `base` one dropped) is set, or for a delta incremented. A new series over the cap, or of
    /// a family already exported with another type, is dropped and counted.
    pub fn record(&mut self, owner: Uuid, base: &[(String, String)], samples: Vec<Sample>) {
        for s in samples {
            let mut labels = base.to_vec();
            labels.extend(
                s.labels
                    .into_iter()
                    .filter(|(n, _)| !base.iter().any(|(b, _)| b == n)),
            );
            let key: SeriesKey = (s.suffix, labels);
            let family = self.families.entry(s.family.clone()).or_default();
            if family.kind.is_some_and(|k| k != s.kind) {
                self.dropped += 1;
                continue;
            }
            match family.series.get_mut(&key) {
                Some(v) if s.delta => *v += s.value,
                Some(v) => *v = s.value,
                None if self.count >= self.max => {
                    self.dropped += 1;
                    if family.series.is_empty() {
                        self.families.remove(&s.family);
                    }
                }
                None => {
                    family.kind = Some(s.kind);
                    family.series.insert(key.clone(), s.value);
                    self.count += 1;
                    let owned = self.owners.entry(owner).or_default();
                    owned.insert((s.family, key));
                }
            }
        }
    }

    /// Removes every series `owner` pushed.
    pub fn remove_owner(&mut self, owner: Uuid) {
        let Some(owned) = self.owners.remove(&owner) else {
            return;
        };
        for (family_name, key) in owned {
            if let Some(family) = self.families.get_mut(&family_name) {
                if family.series.remove(&key).is_some() {
                    self.count -= 1;
                }
                if family.series.is_empty() {
                    self.families.remove(&family_name);
                }
            }
        }
    }

    /// How many series are held.
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when no series is held.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// How many series were dropped over the cap or for a type conflict since the start.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The value of the series `family{suffix}` whose labels are exactly `labels` (tests).
    pub fn value(
        &self,
        family: &str,
        suffix: &'static str,
        labels: &[(&str, &str)],
    ) -> Option<f64> {
        let labels = labels
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        self.families
            .get(family)?
            .series
            .get(&(suffix, labels))
            .copied()
    }

    /// Appends every family in Prometheus text format 0.0.4 (a `# TYPE` line, then its series).
    pub fn render(&self, out: &mut String) {
        for (name, family) in &self.families {
            let kind = family.kind.unwrap_or(Kind::Gauge);
            let _ = writeln!(out, "# TYPE {name} {}", kind.type_name());
            for ((suffix, labels), value) in &family.series {
                let _ = write!(out, "{name}{suffix}");
                write_labels(out, labels);
                let _ = writeln!(out, " {}", format_value(*value));
            }
        }
    }
}

/// `{a="x",b="y"}` with Prometheus escaping (`\`, `"`, newline); nothing for no labels.
pub fn write_labels(out: &mut String, labels: &[(String, String)]) {
    if labels.is_empty() {
        return;
    }
    out.push('{');
    for (i, (n, v)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(n);
        out.push_str("=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out.push('}');
}

/// A value as Prometheus writes it (`NaN`, `+Inf`, `-Inf`, else Rust's shortest round-trip form).
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        v.to_string()
    }
}
