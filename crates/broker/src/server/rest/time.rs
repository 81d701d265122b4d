//! ISO 8601 UTC timestamps as the REST Proxy shows them (`2026-12-05T18:00:00.000Z`), from and to ms since
//! the Unix epoch (the proleptic Gregorian calendar; days from civil dates by Howard Hinnant's algorithm).

/// Now, in ms since the Unix epoch.
pub fn now_ms() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// Days since 1970-01-01 of the civil date `y-m-d`.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of `days` since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// `ms` as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn format_iso8601(ms: i64) -> String {
    let (days, ms_of_day) = (ms.div_euclid(86_400_000), ms.rem_euclid(86_400_000));
    let (y, mo, d) = civil_from_days(days);
    let s = ms_of_day / 1000;
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        s / 3600,
        s / 60 % 60,
        s % 60,
        ms_of_day % 1000
    )
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction](Z|+00:00)` → ms; `None` for anything else (other offsets included).
pub fn parse_iso8601(text: &str) -> Option<i64> {
    let t = text
        .strip_suffix('Z')
        .or_else(|| text.strip_suffix("+00:00"))?;
    let (date, time) = t.split_once('T')?;
    let num = |s: &str, len: usize| {
        (s.len() == len && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse::<i64>().ok())
            .flatten()
    };
    let mut date = date.split('-');
    let (y, mo, d) = (
        num(date.next()?, 4)?,
        num(date.next()?, 2)?,
        num(date.next()?, 2)?,
    );
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut hms = hms.split(':');
    let (h, mi, s) = (
        num(hms.next()?, 2)?,
        num(hms.next()?, 2)?,
        num(hms.next()?, 2)?,
    );
    if date.next().is_some()
        || hms.next().is_some()
        || !(1..=12).contains(&mo)
        || !(1..=31).contains(&d)
        || h > 23
        || mi > 59
        || s > 60
    {
        return None;
    }
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let ms = format!("{frac:0<3}")[..3].parse::<i64>().ok()?;
    Some(((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_round_trips() {
        assert_eq!(format_iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            format_iso8601(1_612_552_482_143),
            "2021-02-05T19:14:42.143Z"
        );
        assert_eq!(
            parse_iso8601("2021-02-05T19:14:42.143Z"),
            Some(1_612_552_482_143)
        );
        assert_eq!(
            parse_iso8601("2021-02-05T19:14:42Z"),
            Some(1_612_552_482_000)
        );
        assert_eq!(
            parse_iso8601("2024-02-29T00:00:00.5+00:00"),
            Some(1_709_164_800_500)
        );
        assert_eq!(
            format_iso8601(1_709_164_800_500),
            "2024-02-29T00:00:00.500Z"
        );
        for bad in [
            "",
            "2021-02-05",
            "2021-02-05T19:14:42",
            "2021-13-05T00:00:00Z",
            "x021-02-05T00:00:00Z",
        ] {
            assert_eq!(parse_iso8601(bad), None, "{bad}");
        }
    }
}
