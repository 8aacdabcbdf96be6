//! The `granularity` of `$bucketAuto`: bucket boundaries rounded to a series of preferred
//! numbers (Renard `R5` to `R80`, `1-2-5`, `E6` to `E192`) or to powers of two
//! (`POWERSOF2`), as MongoDB rounds them: up to the least number of the series strictly
//! greater than the value, down to the greatest strictly less; 0 stays 0.

use bson::Bson;

use crate::error::{Error, ErrorCode, Result};

const R5: &[f64] = &[10.0, 16.0, 25.0, 40.0, 63.0];
const R10: &[f64] = &[
    100.0, 125.0, 160.0, 200.0, 250.0, 315.0, 400.0, 500.0, 630.0, 800.0,
];
const R20: &[f64] = &[
    100.0, 112.0, 125.0, 140.0, 160.0, 180.0, 200.0, 224.0, 250.0, 280.0, 315.0, 355.0, 400.0,
    450.0, 500.0, 560.0, 630.0, 710.0, 800.0, 900.0,
];
const R40: &[f64] = &[
    100.0, 106.0, 112.0, 118.0, 125.0, 132.0, 140.0, 150.0, 160.0, 170.0, 180.0, 190.0, 200.0,
    212.0, 224.0, 236.0, 250.0, 265.0, 280.0, 300.0, 315.0, 355.0, 375.0, 400.0, 425.0, 450.0,
    475.0, 500.0, 530.0, 560.0, 600.0, 630.0, 670.0, 710.0, 750.0, 800.0, 850.0, 900.0, 950.0,
];
const R80: &[f64] = &[
    103.0, 109.0, 115.0, 122.0, 128.0, 136.0, 145.0, 155.0, 165.0, 175.0, 185.0, 195.0, 206.0,
    218.0, 230.0, 243.0, 258.0, 272.0, 290.0, 307.0, 325.0, 345.0, 365.0, 387.0, 412.0, 437.0,
    462.0, 487.0, 515.0, 545.0, 575.0, 615.0, 650.0, 690.0, 730.0, 775.0, 825.0, 875.0, 925.0,
    975.0,
];
const S125: &[f64] = &[10.0, 20.0, 50.0];
const E6: &[f64] = &[10.0, 15.0, 22.0, 33.0, 47.0, 68.0];
const E12: &[f64] = &[
    10.0, 12.0, 15.0, 18.0, 22.0, 27.0, 33.0, 39.0, 47.0, 56.0, 68.0, 82.0,
];
const E24: &[f64] = &[
    10.0, 11.0, 12.0, 13.0, 15.0, 16.0, 18.0, 20.0, 22.0, 24.0, 27.0, 30.0, 33.0, 36.0, 39.0, 43.0,
    47.0, 51.0, 56.0, 62.0, 68.0, 75.0, 82.0, 91.0,
];
const E48: &[f64] = &[
    100.0, 105.0, 110.0, 115.0, 121.0, 127.0, 133.0, 140.0, 147.0, 154.0, 162.0, 169.0, 178.0,
    187.0, 196.0, 205.0, 215.0, 226.0, 237.0, 249.0, 261.0, 274.0, 287.0, 301.0, 316.0, 332.0,
    348.0, 365.0, 383.0, 402.0, 422.0, 442.0, 464.0, 487.0, 511.0, 536.0, 562.0, 590.0, 619.0,
    649.0, 681.0, 715.0, 750.0, 787.0, 825.0, 866.0, 909.0, 953.0,
];

const E96: &[f64] = &[
    100.0, 102.0, 105.0, 107.0, 110.0, 113.0, 115.0, 118.0, 121.0, 124.0, 127.0, 130.0, 133.0,
    137.0, 140.0, 143.0, 147.0, 150.0, 154.0, 158.0, 162.0, 165.0, 169.0, 174.0, 178.0, 182.0,
    187.0, 191.0, 196.0, 200.0, 205.0, 210.0, 215.0, 221.0, 226.0, 232.0, 237.0, 243.0, 249.0,
    255.0, 261.0, 267.0, 274.0, 280.0, 287.0, 294.0, 301.0, 309.0, 316.0, 324.0, 332.0, 340.0,
    348.0, 357.0, 365.0, 374.0, 383.0, 392.0, 402.0, 412.0, 422.0, 432.0, 442.0, 453.0, 464.0,
    475.0, 487.0, 499.0, 511.0, 523.0, 536.0, 549.0, 562.0, 576.0, 590.0, 604.0, 619.0, 634.0,
    649.0, 665.0, 681.0, 698.0, 715.0, 732.0, 750.0, 768.0, 787.0, 806.0, 825.0, 845.0, 866.0,
    887.0, 909.0, 931.0, 953.0, 976.0,
];
const E192: &[f64] = &[
    100.0, 101.0, 102.0, 104.0, 105.0, 106.0, 107.0, 109.0, 110.0, 111.0, 113.0, 114.0, 115.0,
    117.0, 118.0, 120.0, 121.0, 123.0, 124.0, 126.0, 127.0, 129.0, 130.0, 132.0, 133.0, 135.0,
    137.0, 138.0, 140.0, 142.0, 143.0, 145.0, 147.0, 149.0, 150.0, 152.0, 154.0, 156.0, 158.0,
    160.0, 162.0, 164.0, 165.0, 167.0, 169.0, 172.0, 174.0, 176.0, 178.0, 180.0, 182.0, 184.0,
    187.0, 189.0, 191.0, 193.0, 196.0, 198.0, 200.0, 203.0, 205.0, 208.0, 210.0, 213.0, 215.0,
    218.0, 221.0, 223.0, 226.0, 229.0, 232.0, 234.0, 237.0, 240.0, 243.0, 246.0, 249.0, 252.0,
    255.0, 258.0, 261.0, 264.0, 267.0, 271.0, 274.0, 277.0, 280.0, 284.0, 287.0, 291.0, 294.0,
    298.0, 301.0, 305.0, 309.0, 312.0, 316.0, 320.0, 324.0, 328.0, 332.0, 336.0, 340.0, 344.0,
    348.0, 352.0, 357.0, 361.0, 365.0, 370.0, 374.0, 379.0, 383.0, 388.0, 392.0, 397.0, 402.0,
    407.0, 412.0, 417.0, 422.0, 427.0, 432.0, 437.0, 442.0, 448.0, 453.0, 459.0, 464.0, 470.0,
    475.0, 481.0, 487.0, 493.0, 499.0, 505.0, 511.0, 517.0, 523.0, 530.0, 536.0, 542.0, 549.0,
    556.0, 562.0, 569.0, 576.0, 583.0, 590.0, 597.0, 604.0, 612.0, 619.0, 626.0, 634.0, 642.0,
    649.0, 657.0, 665.0, 673.0, 681.0, 690.0, 698.0, 706.0, 715.0, 723.0, 732.0, 741.0, 750.0,
    759.0, 768.0, 777.0, 787.0, 796.0, 806.0, 816.0, 825.0, 835.0, 845.0, 856.0, 866.0, 876.0,
    887.0, 898.0, 909.0, 920.0, 931.0, 942.0, 953.0, 965.0, 976.0, 988.0,
];

/// A rounding of bucket boundaries.
#[derive(Clone, Copy, Debug)]
pub(super) enum Granularity {
    /// A series of preferred numbers, as MongoDB scales it (by powers of ten).
    Series(&'static [f64]),
    PowersOf2,
}

fn err(code: u32, message: impl Into<String>) -> Error {
    Error::rejected(ErrorCode::Location(code), message)
}

impl Granularity {
    /// Parses a granularity name.
    ///
    /// # Errors
    /// `Location40257` for an unknown name, as MongoDB.
    pub(super) fn parse(name: &str) -> Result<Granularity> {
        Ok(Granularity::Series(match name {
            "R5" => R5,
            "R10" => R10,
            "R20" => R20,
            "R40" => R40,
            "R80" => R80,
            "1-2-5" => S125,
            "E6" => E6,
            "E12" => E12,
            "E24" => E24,
            "E48" => E48,
            "E96" => E96,
            "E192" => E192,
            "POWERSOF2" => return Ok(Granularity::PowersOf2),
            other => {
                return Err(err(
                    40257,
                    format!("Unknown rounding granularity '{other}'"),
                ));
            }
        }))
    }

    /// Checks a `groupBy` value: a number, not NaN, not negative.
    ///
    /// # Errors
    /// `Location40258`, `Location40259`, `Location40260` as MongoDB.
    pub(super) fn check(v: &Bson) -> Result<()> {
        let x = match v {
            Bson::Int32(n) => f64::from(*n),
            #[expect(clippy::cast_precision_loss, reason = "a sign and NaN check")]
            Bson::Int64(n) => *n as f64,
            Bson::Double(x) => *x,
            other => {
                return Err(err(
                    40258,
                    format!(
                        "$bucketAuto can specify a 'granularity' with numeric boundaries only, \
                         but found {other}"
                    ),
                ));
            }
        };
        if x.is_nan() {
            return Err(err(
                40259,
                "$bucketAuto can specify a 'granularity' with numeric boundaries only, but \
                 found a NaN",
            ));
        }
        if x < 0.0 {
            return Err(err(
                40260,
                "$bucketAuto can specify a 'granularity' with non-negative numbers only, but \
                 found a negative number",
            ));
        }
        Ok(())
    }

    /// The least number of the granularity strictly greater than `v` (0 stays 0).
    pub(super) fn round_up(self, v: &Bson) -> Bson {
        self.round(v, true)
    }

    /// The greatest number of the granularity strictly less than `v` (0 stays 0).
    pub(super) fn round_down(self, v: &Bson) -> Bson {
        self.round(v, false)
    }

    #[expect(clippy::cast_precision_loss, reason = "rounding in doubles as MongoDB")]
    fn round(self, v: &Bson, up: bool) -> Bson {
        let x = match v {
            Bson::Int32(n) => f64::from(*n),
            Bson::Int64(n) => *n as f64,
            Bson::Double(x) => *x,
            other => return other.clone(),
        };
        if x == 0.0 {
            return v.clone();
        }
        match self {
            Granularity::Series(s) => Bson::Double(if up {
                series_up(s, x)
            } else {
                series_down(s, x)
            }),
            Granularity::PowersOf2 => {
                #[expect(clippy::cast_possible_truncation, reason = "an exponent")]
                let exp: i32 = match v {
                    Bson::Double(d) if up => (d.log2().floor() + 1.0) as i32,
                    Bson::Double(d) => (d.log2().ceil() - 1.0) as i32,
                    _ => {
                        #[expect(clippy::cast_possible_truncation, reason = "whole numbers")]
                        let n = x as i64;
                        let bits = 63 - i32::try_from(n.leading_zeros()).unwrap_or(0);
                        if up {
                            bits + 1
                        } else if n.count_ones() == 1 {
                            bits - 1
                        } else {
                            bits
                        }
                    }
                };
                pow2(exp)
            }
        }
    }
}

/// `2^exp` as MongoDB's `$pow` of two integers: an int when it fits, else a long, a double
/// for a negative exponent.
fn pow2(exp: i32) -> Bson {
    if exp < 0 {
        return Bson::Double(2f64.powi(exp));
    }
    if exp < 31 {
        return Bson::Int32(1 << exp);
    }
    if exp < 63 {
        return Bson::Int64(1 << exp);
    }
    Bson::Double(2f64.powi(exp))
}

fn series_up(s: &[f64], x: f64) -> f64 {
    let (first, last) = (s[0], s[s.len() - 1]);
    let mut m = 1.0;
    while x >= last * m {
        m *= 10.0;
    }
    while x < first * m {
        let previous_min = first * m;
        m /= 10.0;
        if x >= last * m {
            return previous_min;
        }
    }
    s.iter().find(|&&n| x < n * m).map_or(last * m, |n| n * m)
}

fn series_down(s: &[f64], x: f64) -> f64 {
    let (first, last) = (s[0], s[s.len() - 1]);
    let mut m = 1.0;
    while x <= first * m {
        m /= 10.0;
    }
    while x > last * m {
        let previous_max = last * m;
        m *= 10.0;
        if x <= first * m {
            return previous_max;
        }
    }
    s.iter()
        .rev()
        .find(|&&n| n * m < x)
        .map_or(first * m, |n| n * m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_round_strictly_past_the_value() {
        let r5 = Granularity::Series(R5);
        assert_eq!(r5.round_up(&Bson::Int32(25)), Bson::Double(40.0));
        assert_eq!(r5.round_up(&Bson::Double(26.0)), Bson::Double(40.0));
        assert_eq!(r5.round_down(&Bson::Int32(25)), Bson::Double(16.0));
        assert_eq!(r5.round_up(&Bson::Int32(70)), Bson::Double(100.0));
        assert_eq!(r5.round_down(&Bson::Int32(100)), Bson::Double(63.0));
        assert_eq!(r5.round_up(&Bson::Double(0.7)), Bson::Double(1.0));
        assert_eq!(r5.round_up(&Bson::Int32(0)), Bson::Int32(0));
        let e6 = Granularity::Series(E6);
        // MongoDB's own example: 0.8 rounds up to 1 and down to 0.68.
        assert_eq!(e6.round_up(&Bson::Double(0.8)), Bson::Double(1.0));
        let down = e6.round_down(&Bson::Double(0.8));
        assert!(
            matches!(down, Bson::Double(d) if (d - 0.68).abs() < 1e-12),
            "{down}"
        );
    }

    #[test]
    fn powers_of_two_round_strictly_past_the_value() {
        let p = Granularity::PowersOf2;
        assert_eq!(p.round_up(&Bson::Int32(4)), Bson::Int32(8));
        assert_eq!(p.round_up(&Bson::Int32(5)), Bson::Int32(8));
        assert_eq!(p.round_down(&Bson::Int32(4)), Bson::Int32(2));
        assert_eq!(p.round_down(&Bson::Int32(5)), Bson::Int32(4));
        assert_eq!(p.round_up(&Bson::Double(0.3)), Bson::Double(0.5));
        assert_eq!(p.round_down(&Bson::Double(3.0)), Bson::Int32(2));
    }
}
