//! Arithmetic expressions: `$add`, `$subtract`, `$multiply`, `$divide`, `$mod`, `$abs` on
//! numbers (integers while they fit, as MongoDB widens) and dates.

use bson::{Bson, DateTime};

use super::EvalError;
use crate::error::ErrorCode;

/// An arithmetic operator of an expression.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arith {
    Add,
    Subtract,
    Multiply,
    Divide,
    Mod,
    Abs,
}

/// A number as aggregation adds it: an integer, or a double.
#[derive(Clone, Copy)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn of(v: &Bson) -> Option<Num> {
        match v {
            Bson::Int32(n) => Some(Num::Int(i64::from(*n))),
            Bson::Int64(n) => Some(Num::Int(*n)),
            Bson::Double(d) => Some(Num::Float(*d)),
            _ => None,
        }
    }

    #[expect(clippy::cast_precision_loss, reason = "aggregation widens to double")]
    fn float(self) -> f64 {
        match self {
            Num::Int(n) => n as f64,
            Num::Float(d) => d,
        }
    }

    fn bson(self) -> Bson {
        match self {
            Num::Int(n) => match i32::try_from(n) {
                Ok(i) => Bson::Int32(i),
                Err(_) => Bson::Int64(n),
            },
            Num::Float(d) => Bson::Double(d),
        }
    }

    /// `self op other` on integers when both are and it does not overflow, else on doubles.
    fn apply(
        self,
        other: Num,
        int: fn(i64, i64) -> Option<i64>,
        float: fn(f64, f64) -> f64,
    ) -> Num {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => match int(a, b) {
                Some(n) => Num::Int(n),
                None => Num::Float(float(self.float(), other.float())),
            },
            _ => Num::Float(float(self.float(), other.float())),
        }
    }
}

/// An arithmetic operator on evaluated operands (`None`: missing).
///
/// # Errors
/// `TypeMismatch` for an operand that is not a number (or a date where one is allowed);
/// MongoDB's 16608 for a `$divide` by zero, 16610 for a `$mod` by zero.
pub(super) fn arith(op: Arith, args: &[Option<Bson>]) -> std::result::Result<Bson, EvalError> {
    let name = match op {
        Arith::Add => "$add",
        Arith::Subtract => "$subtract",
        Arith::Multiply => "$multiply",
        Arith::Divide => "$divide",
        Arith::Mod => "$mod",
        Arith::Abs => "$abs",
    };
    let not_numeric = |v: &Bson| {
        Err(EvalError::failed(
            ErrorCode::TypeMismatch,
            format!("{name} only supports numeric or date types, not {v}"),
        ))
    };
    if args
        .iter()
        .any(|a| matches!(a, None | Some(Bson::Null | Bson::Undefined)))
    {
        return Ok(Bson::Null);
    }
    let values: Vec<&Bson> = args.iter().flatten().collect();
    match op {
        Arith::Add => {
            let mut date: Option<i64> = None;
            let mut sum = Num::Int(0);
            for v in values {
                match (v, Num::of(v)) {
                    (Bson::DateTime(t), _) if date.is_none() => date = Some(t.timestamp_millis()),
                    (_, Some(n)) => sum = sum.apply(n, i64::checked_add, |a, b| a + b),
                    _ => return not_numeric(v),
                }
            }
            Ok(match date {
                #[expect(clippy::cast_possible_truncation, reason = "ms of a date")]
                Some(t) => Bson::DateTime(DateTime::from_millis(match sum {
                    Num::Int(n) => t.saturating_add(n),
                    Num::Float(d) => t.saturating_add(d.round() as i64),
                })),
                None => sum.bson(),
            })
        }
        Arith::Multiply => {
            let mut product = Num::Int(1);
            for v in values {
                match Num::of(v) {
                    Some(n) => product = product.apply(n, i64::checked_mul, |a, b| a * b),
                    None => return not_numeric(v),
                }
            }
            Ok(product.bson())
        }
        Arith::Subtract => Ok(match (values[0], values[1]) {
            (Bson::DateTime(a), Bson::DateTime(b)) => {
                Bson::Int64(a.timestamp_millis().saturating_sub(b.timestamp_millis()))
            }
            (Bson::DateTime(a), b) => match Num::of(b) {
                #[expect(clippy::cast_possible_truncation, reason = "ms of a date")]
                Some(n) => Bson::DateTime(DateTime::from_millis(match n {
                    Num::Int(n) => a.timestamp_millis().saturating_sub(n),
                    Num::Float(d) => a.timestamp_millis().saturating_sub(d.round() as i64),
                })),
                None => return not_numeric(b),
            },
            (a, b) => match (Num::of(a), Num::of(b)) {
                (Some(a), Some(b)) => a.apply(b, i64::checked_sub, |a, b| a - b).bson(),
                (None, _) => return not_numeric(a),
                _ => return not_numeric(b),
            },
        }),
        Arith::Divide | Arith::Mod => match (Num::of(values[0]), Num::of(values[1])) {
            (Some(_), Some(b)) if b.float() == 0.0 => Err(EvalError::failed(
                ErrorCode::Location(if op == Arith::Divide { 16608 } else { 16610 }),
                format!("can't {name} by zero"),
            )),
            (Some(a), Some(b)) if op == Arith::Divide => Ok(Bson::Double(a.float() / b.float())),
            (Some(Num::Int(a)), Some(Num::Int(b))) => Ok(Num::Int(a.wrapping_rem(b)).bson()),
            (Some(a), Some(b)) => Ok(Bson::Double(a.float() % b.float())),
            (None, _) => not_numeric(values[0]),
            _ => not_numeric(values[1]),
        },
        Arith::Abs => Ok(match Num::of(values[0]) {
            Some(Num::Int(n)) => n
                .checked_abs()
                .map_or(Bson::Double((n as f64).abs()), |a| Num::Int(a).bson()),
            Some(Num::Float(d)) => Bson::Double(d.abs()),
            None => return not_numeric(values[0]),
        }),
    }
}
