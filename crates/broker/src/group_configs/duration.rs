//! ISO-8601 durations as Java's `Duration.parse` reads them (`PnDTnHnMn.nS`, letters in any case, each number
//! optionally signed, an optional sign before the `P`): the `<duration>` of
//! `share.auto.offset.reset=by_duration:<duration>`.

use std::sync::LazyLock;

use regex::Regex;

static PATTERN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^([-+]?)P(?:([-+]?[0-9]+)D)?(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?$",
    )
    .expect("the duration pattern compiles")
});

/// The duration `text` in milliseconds (truncated toward zero), or `None` when Java's `Duration.parse`
/// refuses it: no component at all, a `T` without one, or a number out of range.
pub fn parse_iso8601_ms(text: &str) -> Option<i64> {
    let caps = PATTERN.captures(text)?;
    let group = |i: usize| caps.get(i).map(|m| m.as_str());
    let (days, hours, minutes, seconds) = (group(2), group(4), group(5), group(6));
    if group(3) == Some("T") || group(3).is_some_and(str::is_empty) {
        return None;
    }
    if days.is_none() && hours.is_none() && minutes.is_none() && seconds.is_none() {
        return None;
    }
    let number = |s: Option<&str>| s.map_or(Some(0i128), |s| s.parse::<i128>().ok());
    let mut nanos = number(days)? * 86_400_000_000_000
        + number(hours)? * 3_600_000_000_000
        + number(minutes)? * 60_000_000_000
        + number(seconds)? * 1_000_000_000;
    if let Some(fraction) = group(7).filter(|f| !f.is_empty()) {
        let digits = format!("{fraction:0<9}").parse::<i128>().ok()?;
        nanos += if seconds.is_some_and(|s| s.starts_with('-')) {
            -digits
        } else {
            digits
        };
    }
    if group(1) == Some("-") {
        nanos = -nanos;
    }
    i64::try_from(nanos / 1_000_000).ok()
}

#[cfg(test)]
mod tests {
    use super::parse_iso8601_ms;

    #[test]
    fn reads_java_durations() {
        assert_eq!(parse_iso8601_ms("PT1H"), Some(3_600_000));
        assert_eq!(parse_iso8601_ms("P1DT2H3M4.5S"), Some(93_784_500));
        assert_eq!(parse_iso8601_ms("pt15m"), Some(900_000));
        assert_eq!(parse_iso8601_ms("PT0S"), Some(0));
        assert_eq!(parse_iso8601_ms("-PT1H"), Some(-3_600_000));
        assert_eq!(parse_iso8601_ms("PT-0.5S"), Some(-500));
        for bad in ["", "P", "PT", "1H", "PT1X", "xx", "P1H", "PT1.S1"] {
            assert_eq!(parse_iso8601_ms(bad), None, "{bad}");
        }
    }
}
