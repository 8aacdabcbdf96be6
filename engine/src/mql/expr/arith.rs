//! Arithmetic expressions: `$add`, `$subtract`, `$multiply`, `$divide`, `$mod`, `$abs` on
//! numbers (keeping MongoDB's widths: an int32 while every operand is one and the result
//! fits, else a long, a double past a long) and dates; `$round` and `$trunc`
//! (to a decimal place, -20 to 100; `$round` rounds half to even), `$ceil`, `$floor`,
//! `$sqrt`, `$pow`, `$exp`, `$ln`, `$log`, `$log10`. A null or missing operand makes the
//! result null.

use bson::{Bson, DateTime};

use super::args::{self, fail, type_name};
use super::{EvalError, Expr, Resolve};
use crate::error::{ErrorCode, Result};

/// An arithmetic operator of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arith {
    Add,
    Subtract,
    Multiply,
    Divide,
    Mod,
    Abs,
    Round,
    Trunc,
    Ceil,
    Floor,
    Sqrt,
    Pow,
    Exp,
    Ln,
    Log,
    Log10,
}

/// Parses the operators of this file that `mod.rs` does not (`None` for another operator).
///
/// # Errors
/// MongoDB's 16020 for a wrong operand count.
pub(super) fn parse(op: &str, arg: &Bson, target: &Resolve<'_>) -> Result<Option<Expr>> {
    let (a, args) = match op {
        "$round" | "$trunc" => (
            if op == "$round" {
                Arith::Round
            } else {
                Arith::Trunc
            },
            args::between(op, arg, target, 1, 2)?,
        ),
        "$pow" | "$log" => (
            if op == "$pow" { Arith::Pow } else { Arith::Log },
            args::exactly::<2>(op, arg, target)?.into(),
        ),
        "$ceil" | "$floor" | "$sqrt" | "$exp" | "$ln" | "$log10" => (
            match op {
                "$ceil" => Arith::Ceil,
                "$floor" => Arith::Floor,
                "$sqrt" => Arith::Sqrt,
                "$exp" => Arith::Exp,
                "$ln" => Arith::Ln,
                _ => Arith::Log10,
            },
            args::exactly::<1>(op, arg, target)?.into(),
        ),
        _ => return Ok(None),
    };
    Ok(Some(Expr::Arith(a, args)))
}

/// A number as aggregation computes on it, keeping MongoDB's operand widths: an int32, an
/// int64 (long), or a double.
#[derive(Clone, Copy)]
enum Num {
    Int(i32),
    Long(i64),
    Float(f64),
}

impl Num {
    fn of(v: &Bson) -> Option<Num> {
        match v {
            Bson::Int32(n) => Some(Num::Int(*n)),
            Bson::Int64(n) => Some(Num::Long(*n)),
            Bson::Double(d) => Some(Num::Float(*d)),
            _ => None,
        }
    }

    /// The integer value (`None` for a double).
    fn int(self) -> Option<i64> {
        match self {
            Num::Int(n) => Some(i64::from(n)),
            Num::Long(n) => Some(n),
            Num::Float(_) => None,
        }
    }

    #[expect(clippy::cast_precision_loss, reason = "aggregation widens to double")]
    fn float(self) -> f64 {
        match self {
            Num::Int(n) => f64::from(n),
            Num::Long(n) => n as f64,
            Num::Float(d) => d,
        }
    }
}

/// The result of integer arithmetic as MongoDB types it: an int32 when every operand was an
/// int32 and the value fits, else a long when it fits, else a double.
#[expect(
    clippy::cast_precision_loss,
    reason = "a long overflow becomes a double"
)]
fn typed(value: i128, all_int32: bool) -> Bson {
    match (i32::try_from(value), i64::try_from(value)) {
        (Ok(i), _) if all_int32 => Bson::Int32(i),
        (_, Ok(l)) => Bson::Int64(l),
        _ => Bson::Double(value as f64),
    }
}

/// The sum (`$add`) or product (`$multiply`) of numbers: exact on integers, typed by
/// [`typed`]; a double once any operand is a double.
fn fold(values: &[Num], add: bool) -> Bson {
    let mut all_int32 = true;
    let mut exact: Option<i128> = Some(if add { 0 } else { 1 });
    let mut float = if add { 0.0 } else { 1.0 };
    let mut is_float = false;
    for n in values {
        all_int32 &= matches!(n, Num::Int(_));
        is_float |= matches!(n, Num::Float(_));
        float = if add {
            float + n.float()
        } else {
            float * n.float()
        };
        exact = match (exact, n.int()) {
            (Some(e), Some(i)) => {
                let next = if add {
                    e.checked_add(i128::from(i))
                } else {
                    e.checked_mul(i128::from(i))
                };
                // A product past a long is a double, whatever follows; a sum is exact.
                next.filter(|v| add || i64::try_from(*v).is_ok())
            }
            _ => None,
        };
    }
    match exact {
        Some(v) if !is_float => typed(v, all_int32),
        _ => Bson::Double(float),
    }
}

/// An arithmetic operator on evaluated operands (`None`: missing).
///
/// Integer results keep MongoDB's widths: int32 operands give an int32 while it fits, else a
/// long; a long operand gives a long; a long overflow gives a double.
///
/// # Errors
/// MongoDB's codes for an operand of the wrong type: 16554 (`$add`), 16612 (`$add` of two
/// dates), 16556 (`$subtract`), 16613 (`$subtract` of a non-number from a date), 16555
/// (`$multiply`), 16609 (`$divide`), 16611 (`$mod`), 28765 (`$abs` and the one-argument
/// operators); 16608 for a `$divide` by zero, 16610 for a `$mod` by zero, 28680 for the `$abs`
/// of the smallest long.
pub(super) fn arith(op: Arith, args: &[Option<Bson>]) -> std::result::Result<Bson, EvalError> {
    let name = match op {
        Arith::Add => "$add",
        Arith::Subtract => "$subtract",
        Arith::Multiply => "$multiply",
        Arith::Divide => "$divide",
        Arith::Mod => "$mod",
        Arith::Abs => "$abs",
        Arith::Round => "$round",
        Arith::Trunc => "$trunc",
        Arith::Ceil => "$ceil",
        Arith::Floor => "$floor",
        Arith::Sqrt => "$sqrt",
        Arith::Pow => "$pow",
        Arith::Exp => "$exp",
        Arith::Ln => "$ln",
        Arith::Log => "$log",
        Arith::Log10 => "$log10",
    };
    let nullish = |a: &Option<Bson>| matches!(a, None | Some(Bson::Null | Bson::Undefined));
    // `$add` and `$multiply` take their operands in order, as MongoDB: a null one makes the
    // result null, a wrong type before it fails.
    if matches!(op, Arith::Add | Arith::Multiply) {
        if let Some(end) = args.iter().position(nullish) {
            arith(op, &args[..end])?;
            return Ok(Bson::Null);
        }
    } else if args.iter().any(nullish) {
        return Ok(Bson::Null);
    }
    let values: Vec<&Bson> = args.iter().flatten().collect();
    let kind = |v: &Bson| type_name(Some(v));
    match op {
        Arith::Add => {
            let mut date: Option<i64> = None;
            let mut nums = Vec::with_capacity(values.len());
            for v in values {
                match (v, Num::of(v)) {
                    (Bson::DateTime(_), _) if date.is_some() => {
                        return Err(fail(16612, "only one date allowed in an $add expression"));
                    }
                    (Bson::DateTime(t), _) => date = Some(t.timestamp_millis()),
                    (_, Some(n)) => nums.push(n),
                    _ => {
                        return Err(fail(
                            16554,
                            format!("$add only supports numeric or date types, not {}", kind(v)),
                        ));
                    }
                }
            }
            let sum = fold(&nums, true);
            Ok(match date {
                #[expect(clippy::cast_possible_truncation, reason = "ms of a date")]
                Some(t) => Bson::DateTime(DateTime::from_millis(match sum {
                    Bson::Int32(n) => t.saturating_add(i64::from(n)),
                    Bson::Int64(n) => t.saturating_add(n),
                    Bson::Double(d) => t.saturating_add(d.round() as i64),
                    _ => t,
                })),
                None => sum,
            })
        }
        Arith::Multiply => {
            let mut nums = Vec::with_capacity(values.len());
            for v in values {
                match Num::of(v) {
                    Some(n) => nums.push(n),
                    None => {
                        return Err(fail(
                            16555,
                            format!("$multiply only supports numeric types, not {}", kind(v)),
                        ));
                    }
                }
            }
            Ok(fold(&nums, false))
        }
        Arith::Subtract => Ok(match (values[0], values[1]) {
            (Bson::DateTime(a), Bson::DateTime(b)) => {
                Bson::Int64(a.timestamp_millis().saturating_sub(b.timestamp_millis()))
            }
            (Bson::DateTime(a), b) => match Num::of(b) {
                #[expect(clippy::cast_possible_truncation, reason = "ms of a date")]
                Some(n) => Bson::DateTime(DateTime::from_millis(match n.int() {
                    Some(n) => a.timestamp_millis().saturating_sub(n),
                    None => a
                        .timestamp_millis()
                        .saturating_sub(n.float().round() as i64),
                })),
                None => {
                    return Err(fail(
                        16613,
                        format!("can't $subtract {} from a date", kind(b)),
                    ));
                }
            },
            (a, b) => match (Num::of(a), Num::of(b)) {
                (Some(x), Some(y)) => match (x.int(), y.int()) {
                    (Some(i), Some(j)) => typed(
                        i128::from(i) - i128::from(j),
                        matches!((x, y), (Num::Int(_), Num::Int(_))),
                    ),
                    _ => Bson::Double(x.float() - y.float()),
                },
                _ => {
                    return Err(fail(
                        16556,
                        format!("can't $subtract {} from {}", kind(b), kind(a)),
                    ));
                }
            },
        }),
        Arith::Divide | Arith::Mod => match (Num::of(values[0]), Num::of(values[1])) {
            (Some(_), Some(b)) if b.float() == 0.0 => Err(EvalError::failed(
                ErrorCode::Location(if op == Arith::Divide { 16608 } else { 16610 }),
                format!("can't {name} by zero"),
            )),
            (Some(a), Some(b)) if op == Arith::Divide => Ok(Bson::Double(a.float() / b.float())),
            (Some(Num::Int(a)), Some(Num::Int(b))) => Ok(Bson::Int32(a.wrapping_rem(b))),
            (Some(a), Some(b)) => Ok(match (a.int(), b.int()) {
                (Some(a), Some(b)) => Bson::Int64(a.wrapping_rem(b)),
                _ => Bson::Double(a.float() % b.float()),
            }),
            _ => Err(fail(
                if op == Arith::Divide { 16609 } else { 16611 },
                format!(
                    "{name} only supports numeric types, not {} and {}",
                    kind(values[0]),
                    kind(values[1])
                ),
            )),
        },
        Arith::Abs => match Num::of(values[0]) {
            Some(Num::Int(n)) => Ok(n
                .checked_abs()
                .map_or(Bson::Int64(i64::from(n).abs()), Bson::Int32)),
            Some(Num::Long(n)) => n
                .checked_abs()
                .map(Bson::Int64)
                .ok_or_else(|| fail(28680, "can't take $abs of long long min")),
            Some(Num::Float(d)) => Ok(Bson::Double(d.abs())),
            None => Err(fail(
                28765,
                format!("$abs only supports numeric types, not {}", kind(values[0])),
            )),
        },
        Arith::Round | Arith::Trunc => round(op == Arith::Round, name, &values),
        Arith::Pow => pow(values[0], values[1]),
        Arith::Log => {
            let n = |v: &Bson, code: u32, what: &str| {
                Num::of(v).map(Num::float).ok_or_else(|| {
                    fail(
                        code,
                        format!("$log's {what} must be numeric, not {}", type_name(Some(v))),
                    )
                })
            };
            let (x, base) = (
                n(values[0], 28756, "argument")?,
                n(values[1], 28757, "base")?,
            );
            if x.is_nan() || base.is_nan() {
                return Ok(Bson::Double(f64::NAN));
            }
            if x <= 0.0 {
                return Err(fail(
                    28758,
                    format!("$log's argument must be a positive number, but is {x}"),
                ));
            }
            if base <= 0.0 || base == 1.0 {
                return Err(fail(
                    28759,
                    format!("$log's base must be a positive number not equal to 1, but is {base}"),
                ));
            }
            Ok(Bson::Double(x.ln() / base.ln()))
        }
        Arith::Ceil | Arith::Floor | Arith::Sqrt | Arith::Exp | Arith::Ln | Arith::Log10 => {
            let v = values[0];
            let x = match Num::of(v) {
                Some(Num::Int(_) | Num::Long(_)) if matches!(op, Arith::Ceil | Arith::Floor) => {
                    return Ok(v.clone());
                }
                Some(n) => n.float(),
                None => {
                    return Err(fail(
                        28765,
                        format!(
                            "{name} only supports numeric types, not {}",
                            type_name(Some(v))
                        ),
                    ));
                }
            };
            let positive = |code: u32| {
                if x > 0.0 || x.is_nan() {
                    Ok(())
                } else {
                    Err(fail(
                        code,
                        format!("{name}'s argument must be a positive number, but is {x}"),
                    ))
                }
            };
            Ok(Bson::Double(match op {
                Arith::Ceil => x.ceil(),
                Arith::Floor => x.floor(),
                Arith::Sqrt => {
                    if x < 0.0 {
                        return Err(fail(
                            28714,
                            "$sqrt's argument must be greater than or equal to 0",
                        ));
                    }
                    x.sqrt()
                }
                Arith::Exp => x.exp(),
                Arith::Ln => {
                    positive(28766)?;
                    x.ln()
                }
                _ => {
                    positive(28761)?;
                    x.log10()
                }
            }))
        }
    }
}

/// `$round` (`half_even`) or `$trunc` of `values[0]` to decimal place `values[1]` (0 when
/// absent): an integer stays an integer, a double a double.
///
/// # Errors
/// MongoDB's 51081 for a non-numeric value, 51082 for a place that is not a whole number,
/// 51083 for a place outside -20..=100.
fn round(half_even: bool, name: &str, values: &[&Bson]) -> std::result::Result<Bson, EvalError> {
    let place = match values.get(1) {
        None => 0,
        Some(p) => {
            let p = crate::mql::filter::exact_int(p).ok_or_else(|| {
                fail(
                    51082,
                    format!("precision argument to {name} must be a integral value"),
                )
            })?;
            if !(-20..=100).contains(&p) {
                return Err(fail(
                    51083,
                    format!(
                        "cannot apply {name} with precision value {p} value must be in [-20, 100]"
                    ),
                ));
            }
            p
        }
    };
    let at = |x: f64| {
        if half_even {
            x.round_ties_even()
        } else {
            x.trunc()
        }
    };
    #[expect(clippy::cast_possible_truncation, reason = "place is within -20..=100")]
    let scale = 10f64.powi(place.unsigned_abs() as i32);
    match Num::of(values[0]) {
        Some(Num::Int(_) | Num::Long(_)) if place >= 0 => Ok(values[0].clone()),
        Some(int @ (Num::Int(_) | Num::Long(_))) => {
            let n = int.int().unwrap_or(0);
            let int32 = matches!(int, Num::Int(_));
            let m = 10_i64.checked_pow(u32::try_from(-place).unwrap_or(u32::MAX));
            let Some(m) = m else {
                return Ok(typed(0, int32));
            };
            let (q, r) = (n / m, n % m);
            let q = if half_even {
                match (2 * r.unsigned_abs()).cmp(&m.unsigned_abs()) {
                    std::cmp::Ordering::Greater => q + n.signum(),
                    std::cmp::Ordering::Equal if q % 2 != 0 => q + n.signum(),
                    _ => q,
                }
            } else {
                q
            };
            Ok(q.checked_mul(m).map_or_else(
                || Bson::Double(at(int.float() / scale) * scale),
                |v| typed(i128::from(v), int32),
            ))
        }
        Some(Num::Float(d)) if !d.is_finite() || d == 0.0 => Ok(Bson::Double(d)),
        Some(Num::Float(d)) => Ok(Bson::Double(decimal_round(d, place, half_even))),
        None => Err(fail(
            51081,
            format!(
                "{name} only supports numeric types, not {}",
                type_name(Some(values[0]))
            ),
        )),
    }
}

/// A finite, non-zero double rounded (`half_even`) or truncated to decimal `place` as MongoDB
/// does, through its decimal value of 15 significant digits (so 2.675 rounds to 2.68 and 0.29
/// truncates to 0.29, where scaling the binary double would give 2.67 and 0.28).
fn decimal_round(d: f64, place: i64, half_even: bool) -> f64 {
    // d.dddddddddddddde±x: 15 significant digits.
    let text = format!("{:.14e}", d.abs());
    let Some((mantissa, exp)) = text.split_once('e') else {
        return d;
    };
    let Ok(exp) = exp.parse::<i64>() else {
        return d;
    };
    let mut digits: Vec<u8> = mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    // Digit i weighs 10^(exp - i): keep those weighing at least 10^-place.
    let keep = exp + place + 1;
    let Ok(kept) = usize::try_from(keep) else {
        return 0.0_f64.copysign(d);
    };
    if kept >= digits.len() {
        return d;
    }
    let up = half_even && {
        let next = digits[kept];
        let rest = digits[kept + 1..].iter().any(|x| *x != 0);
        let odd = kept > 0 && digits[kept - 1] % 2 == 1;
        next > 5 || (next == 5 && (rest || odd))
    };
    digits.truncate(kept);
    let mut exp10 = exp - i64::try_from(kept).unwrap_or(0) + 1;
    if up {
        let mut i = kept;
        loop {
            if i == 0 {
                digits.insert(0, 1);
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    if digits.is_empty() {
        digits.push(0);
        exp10 = 0;
    }
    let text: String = digits.iter().map(|x| char::from(b'0' + x)).collect();
    format!("{text}e{exp10}")
        .parse::<f64>()
        .map_or(d, |v| v.copysign(d))
}

/// `$pow`: an integer while the result fits (a long past an int), else a double.
///
/// # Errors
/// MongoDB's 28762 / 28763 for a non-numeric base / exponent, 28764 for a base of 0 and a
/// negative exponent.
fn pow(base: &Bson, exp: &Bson) -> std::result::Result<Bson, EvalError> {
    let (Some(b), Some(e)) = (Num::of(base), Num::of(exp)) else {
        return Err(if Num::of(base).is_none() {
            fail(
                28762,
                format!("$pow's base must be numeric, not {}", type_name(Some(base))),
            )
        } else {
            fail(
                28763,
                format!(
                    "$pow's exponent must be numeric, not {}",
                    type_name(Some(exp))
                ),
            )
        });
    };
    if b.float() == 0.0 && e.float() < 0.0 {
        return Err(fail(
            28764,
            "$pow cannot take a base of 0 and a negative exponent",
        ));
    }
    let both_int = matches!((b, e), (Num::Int(_), Num::Int(_)));
    if let (Some(bi), Some(ei)) = (b.int(), e.int()) {
        let (b, e) = (bi, ei);
        if e < 0 {
            return Ok(match b {
                1 => typed(1, both_int),
                -1 => typed(if e % 2 == 0 { 1 } else { -1 }, both_int),
                _ => Bson::Double(Num::Long(b).float().powf(Num::Long(e).float())),
            });
        }
        if let Some(v) = u32::try_from(e).ok().and_then(|e| b.checked_pow(e)) {
            // An int stays an int when both operands are ints and it fits.
            return Ok(typed(i128::from(v), both_int));
        }
    }
    Ok(Bson::Double(b.float().powf(e.float())))
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::super::tests::{eval_err, value};
    use super::*;

    fn d(x: f64) -> Option<Bson> {
        Some(Bson::Double(x))
    }

    #[test]
    fn round_is_half_to_even_and_trunc_cuts() {
        // The manual's examples.
        assert_eq!(value(&doc! { "$round": [10.5, 0] }), d(10.0));
        assert_eq!(value(&doc! { "$round": [11.5, 0] }), d(12.0));
        assert_eq!(value(&doc! { "$round": [12.5, 0] }), d(12.0));
        assert_eq!(value(&doc! { "$round": [19.25, 1] }), d(19.2));
        assert_eq!(value(&doc! { "$round": [28.73, -1] }), d(30.0));
        assert_eq!(value(&doc! { "$round": [34.32, -1] }), d(30.0));
        assert_eq!(value(&doc! { "$round": [-45.39, -1] }), d(-50.0));
        assert_eq!(
            value(&doc! { "$round": [1234, -2] }),
            Some(Bson::Int32(1200))
        );
        assert_eq!(
            value(&doc! { "$round": [1250, -2] }),
            Some(Bson::Int32(1200))
        );
        assert_eq!(
            value(&doc! { "$round": [1350_i64, -2] }),
            Some(Bson::Int64(1400))
        );
        assert_eq!(value(&doc! { "$round": [7, 2] }), Some(Bson::Int32(7)));
        assert_eq!(value(&doc! { "$round": 2.5 }), d(2.0));
        assert_eq!(value(&doc! { "$trunc": [19.25, 1] }), d(19.2));
        assert_eq!(value(&doc! { "$trunc": [-45.39, -1] }), d(-40.0));
        assert_eq!(
            value(&doc! { "$trunc": [1299, -2] }),
            Some(Bson::Int32(1200))
        );
        assert_eq!(value(&doc! { "$trunc": -7.8 }), d(-7.0));
        // Through the decimal value, as MongoDB: not 2.67 and 0.28 of the binary doubles.
        assert_eq!(value(&doc! { "$round": [2.675, 2] }), d(2.68));
        assert_eq!(value(&doc! { "$round": [-2.665, 2] }), d(-2.66));
        assert_eq!(value(&doc! { "$trunc": [0.29, 2] }), d(0.29));
        assert_eq!(value(&doc! { "$round": [9.96, 1] }), d(10.0));
        assert_eq!(value(&doc! { "$round": [0.4, 0] }), d(0.0));
        assert_eq!(value(&doc! { "$round": [0.5, 0] }), d(0.0));
        assert_eq!(value(&doc! { "$round": [0.51, 0] }), d(1.0));
        assert_eq!(value(&doc! { "$round": [4.0, -1] }), d(0.0));
        assert_eq!(value(&doc! { "$round": [6.0, -1] }), d(10.0));
        assert_eq!(value(&doc! { "$round": [0.001, 1] }), d(0.0));
        assert_eq!(value(&doc! { "$round": [1.5e300, 2] }), d(1.5e300));
        assert_eq!(value(&doc! { "$round": [null, 1] }), Some(Bson::Null));
        assert_eq!(
            value(&doc! { "$round": [1.5, "$missing"] }),
            Some(Bson::Null)
        );
        assert_eq!(
            eval_err(&doc! { "$round": ["a", 1] }, &doc! {}),
            ErrorCode::Location(51081)
        );
        assert_eq!(
            eval_err(&doc! { "$round": [1.5, 1.5] }, &doc! {}),
            ErrorCode::Location(51082)
        );
        assert_eq!(
            eval_err(&doc! { "$trunc": [1.5, 101] }, &doc! {}),
            ErrorCode::Location(51083)
        );
    }

    #[test]
    fn ceil_floor_keep_integers() {
        assert_eq!(value(&doc! { "$ceil": 7.80 }), d(8.0));
        assert_eq!(value(&doc! { "$ceil": -2.8 }), d(-2.0));
        assert_eq!(value(&doc! { "$floor": -2.8 }), d(-3.0));
        assert_eq!(value(&doc! { "$floor": 5_i64 }), Some(Bson::Int64(5)));
        assert_eq!(value(&doc! { "$ceil": null }), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$ceil": "1" }, &doc! {}),
            ErrorCode::Location(28765)
        );
    }

    #[test]
    fn roots_exponentials_and_logarithms() {
        assert_eq!(value(&doc! { "$sqrt": 25 }), d(5.0));
        assert_eq!(value(&doc! { "$sqrt": "$missing" }), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$sqrt": -1 }, &doc! {}),
            ErrorCode::Location(28714)
        );
        assert_eq!(value(&doc! { "$exp": 0 }), d(1.0));
        assert_eq!(value(&doc! { "$ln": 1 }), d(0.0));
        assert_eq!(value(&doc! { "$log10": 100 }), d(2.0));
        assert_eq!(value(&doc! { "$log": [100, 10] }), d(2.0));
        assert_eq!(value(&doc! { "$log": [8, 2] }), d(3.0));
        assert_eq!(
            eval_err(&doc! { "$ln": 0 }, &doc! {}),
            ErrorCode::Location(28766)
        );
        assert_eq!(
            eval_err(&doc! { "$log10": -1 }, &doc! {}),
            ErrorCode::Location(28761)
        );
        assert_eq!(
            eval_err(&doc! { "$log": [0, 10] }, &doc! {}),
            ErrorCode::Location(28758)
        );
        assert_eq!(
            eval_err(&doc! { "$log": [10, 1] }, &doc! {}),
            ErrorCode::Location(28759)
        );
        assert_eq!(
            eval_err(&doc! { "$log": ["a", 10] }, &doc! {}),
            ErrorCode::Location(28756)
        );
        assert_eq!(
            eval_err(&doc! { "$log": [10, "a"] }, &doc! {}),
            ErrorCode::Location(28757)
        );
    }

    #[test]
    fn pow_keeps_integers_while_they_fit() {
        assert_eq!(value(&doc! { "$pow": [5, 2] }), Some(Bson::Int32(25)));
        assert_eq!(value(&doc! { "$pow": [2, 40] }), Some(Bson::Int64(1 << 40)));
        assert_eq!(value(&doc! { "$pow": [2, 100] }), d(2f64.powi(100)));
        assert_eq!(value(&doc! { "$pow": [5, -2] }), d(0.04));
        assert_eq!(value(&doc! { "$pow": [-1, -3] }), Some(Bson::Int32(-1)));
        assert_eq!(value(&doc! { "$pow": [4.0, 0.5] }), d(2.0));
        assert_eq!(value(&doc! { "$pow": [null, 2] }), Some(Bson::Null));
        assert_eq!(
            eval_err(&doc! { "$pow": [0, -1] }, &doc! {}),
            ErrorCode::Location(28764)
        );
        assert_eq!(
            eval_err(&doc! { "$pow": ["a", 1] }, &doc! {}),
            ErrorCode::Location(28762)
        );
        assert_eq!(
            eval_err(&doc! { "$pow": [1, "a"] }, &doc! {}),
            ErrorCode::Location(28763)
        );
    }

    fn i(n: i32) -> Option<Bson> {
        Some(Bson::Int32(n))
    }

    fn l(n: i64) -> Option<Bson> {
        Some(Bson::Int64(n))
    }

    #[test]
    fn integer_widths_follow_the_operands() {
        // int32 operands: an int32 while the result fits, else a long.
        assert_eq!(value(&doc! { "$add": [1, 2] }), i(3));
        assert_eq!(value(&doc! { "$add": [i32::MAX, 1] }), l(2_147_483_648));
        assert_eq!(value(&doc! { "$add": [i32::MAX, 1, -1] }), i(i32::MAX));
        assert_eq!(
            value(&doc! { "$subtract": [i32::MIN, 1] }),
            l(-2_147_483_649)
        );
        assert_eq!(value(&doc! { "$subtract": [5, 3] }), i(2));
        assert_eq!(value(&doc! { "$multiply": [65_536, 65_536] }), l(1 << 32));
        assert_eq!(value(&doc! { "$multiply": [2, 3] }), i(6));
        // A long operand makes a long, never narrowed back to an int32.
        assert_eq!(value(&doc! { "$add": [1_i64, 2] }), l(3));
        assert_eq!(value(&doc! { "$subtract": [5, 3_i64] }), l(2));
        assert_eq!(value(&doc! { "$multiply": [2_i64, 3] }), l(6));
        assert_eq!(value(&doc! { "$mod": [7_i64, 4] }), l(3));
        assert_eq!(value(&doc! { "$mod": [7, 4] }), i(3));
        assert_eq!(value(&doc! { "$mod": [-7, 4] }), i(-3));
        assert_eq!(value(&doc! { "$mod": [7.5, 2] }), d(1.5));
        assert_eq!(value(&doc! { "$abs": -5_i64 }), l(5));
        assert_eq!(value(&doc! { "$abs": -5 }), i(5));
        assert_eq!(value(&doc! { "$abs": i32::MIN }), l(2_147_483_648));
        assert_eq!(value(&doc! { "$abs": -1.5 }), d(1.5));
        assert_eq!(value(&doc! { "$ceil": 5_i64 }), l(5));
        assert_eq!(value(&doc! { "$trunc": 5_i64 }), l(5));
        assert_eq!(value(&doc! { "$round": [5_i64, 0] }), l(5));
        assert_eq!(value(&doc! { "$round": [15_i64, -1] }), l(20));
        // A long overflow gives a double; a sum is exact before it is typed.
        assert_eq!(
            value(&doc! { "$add": [i64::MAX, 1_i64] }),
            d(9_223_372_036_854_775_808.0)
        );
        assert_eq!(value(&doc! { "$add": [i64::MAX, 1, -1] }), l(i64::MAX));
        assert_eq!(
            value(&doc! { "$multiply": [i64::MAX, 2] }),
            d(18_446_744_073_709_551_614.0)
        );
        assert_eq!(
            value(&doc! { "$subtract": [i64::MIN, 1] }),
            d(-9_223_372_036_854_775_809.0)
        );
        // A double operand makes a double.
        assert_eq!(value(&doc! { "$add": [1, 2.0] }), d(3.0));
        assert_eq!(value(&doc! { "$multiply": [2_i64, 1.5] }), d(3.0));
        assert_eq!(value(&doc! { "$pow": [2_i64, 2] }), l(4));
    }

    #[test]
    fn type_errors_carry_mongodbs_codes() {
        let e = |expr: bson::Document| {
            eval_err(
                &expr,
                &doc! { "s": "x", "t": bson::DateTime::from_millis(0) },
            )
        };
        assert_eq!(e(doc! { "$add": [1, "$s"] }), ErrorCode::Location(16554));
        assert_eq!(e(doc! { "$add": ["$t", "$t"] }), ErrorCode::Location(16612));
        assert_eq!(
            e(doc! { "$subtract": [1, "$s"] }),
            ErrorCode::Location(16556)
        );
        assert_eq!(
            e(doc! { "$subtract": [1, "$t"] }),
            ErrorCode::Location(16556)
        );
        assert_eq!(
            e(doc! { "$subtract": ["$t", "$s"] }),
            ErrorCode::Location(16613)
        );
        assert_eq!(
            e(doc! { "$multiply": [1, "$s"] }),
            ErrorCode::Location(16555)
        );
        assert_eq!(e(doc! { "$divide": ["$s", 1] }), ErrorCode::Location(16609));
        assert_eq!(e(doc! { "$divide": [1, 0] }), ErrorCode::Location(16608));
        assert_eq!(e(doc! { "$mod": [1, "$s"] }), ErrorCode::Location(16611));
        assert_eq!(e(doc! { "$mod": [1, 0] }), ErrorCode::Location(16610));
        assert_eq!(e(doc! { "$abs": "$s" }), ErrorCode::Location(28765));
        assert_eq!(e(doc! { "$abs": i64::MIN }), ErrorCode::Location(28680));
        // Operands in order: a null makes the result null, a wrong type before it fails.
        assert_eq!(value(&doc! { "$add": [null, "x"] }), Some(Bson::Null));
        assert_eq!(e(doc! { "$add": ["$s", null] }), ErrorCode::Location(16554));
        assert_eq!(
            e(doc! { "$multiply": [2, "$s", "$missing"] }),
            ErrorCode::Location(16555)
        );
        assert_eq!(
            value(&doc! { "$multiply": ["$missing", "x"] }),
            Some(Bson::Null)
        );
        assert_eq!(value(&doc! { "$divide": ["x", null] }), Some(Bson::Null));
        // A date and numbers still add.
        assert_eq!(
            value(&doc! { "$add": [{ "$toDate": 0_i64 }, 5_i64, 1.4] }),
            Some(Bson::DateTime(bson::DateTime::from_millis(6)))
        );
    }
}
