//! Compression of small real samples (embedded, see `common/samples.rs`).

use tscoll_codec::{Column, FloatEncoding, TypeEncoding, decode_column, encode_column, tag};

use crate::common::{self, samples};

fn bits_per_value(c: &Column) -> f64 {
    let (body, _) = encode_column(c).unwrap();
    assert!(decode_column(&body, c.len()).unwrap().bitwise_eq(c));
    body.len() as f64 * 8.0 / c.len() as f64
}

#[test]
fn regular_timestamps_cost_far_below_a_bit() {
    let ts = common::parse_sample(samples::BEIJING_TS, true);
    let b = bits_per_value(&ts);
    assert!(b < 1.0, "{b} bits per timestamp");
    // 1000 hourly timestamps.
    let mut c = Column::new();
    (0..1000).for_each(|i| c.push_int(tag::DATETIME, 1_362_067_200_000 + 3_600_000 * i));
    let b = bits_per_value(&c);
    assert!(b < 0.2, "{b} bits per timestamp");
}

#[test]
fn decimal_sensor_values_are_compact() {
    for (name, text, max_bits) in [
        ("TEMP", samples::BEIJING_TEMP, 10.0),
        ("PRES", samples::BEIJING_PRES, 9.0),
        ("PM2.5", samples::BEIJING_PM25, 10.0),
        ("nab", samples::NAB_VALUE, 16.0),
        ("mag", samples::USGS_MAG, 12.0),
    ] {
        let c = common::parse_sample(text, false);
        let (_, layout) = encode_column(&c).unwrap();
        if let Some(f) = layout.floats {
            assert_eq!(f.encoding, FloatEncoding::Alp, "{name}");
        }
        let b = bits_per_value(&c);
        assert!(b < max_bits, "{name}: {b} bits per value");
    }
}

#[test]
fn repeated_strings_use_few_bits() {
    let c = common::parse_sample(samples::BEIJING_WD, false);
    let b = bits_per_value(&c);
    assert!(b < 6.0, "{b} bits per wind direction");
}

#[test]
fn all_present_costs_one_type_byte() {
    let c = common::parse_sample(samples::BEIJING_TEMP, false);
    let (_, layout) = encode_column(&c).unwrap();
    // TEMP mixes int32 and double rows.
    assert_ne!(layout.types, TypeEncoding::Const);
    let ts = common::parse_sample(samples::BEIJING_TS, true);
    assert_eq!(encode_column(&ts).unwrap().1.types, TypeEncoding::Const);
}

#[test]
fn sequential_object_ids_cost_a_few_bits() {
    let mut c = Column::new();
    for i in 0..1000u32 {
        c.push_bytes(
            tag::OBJECT_ID,
            &common::object_id(1_700_000_000 + i / 50, 0x0012_3456 + i),
        );
    }
    let b = bits_per_value(&c);
    assert!(b < 2.0, "{b} bits per ObjectId");
}

/// Dividend-adjusted closes are multiples of a base that changes at each dividend: the Mult
/// encoding stores the cents and the rounding, well below the 12-decimal digits.
#[test]
fn adjusted_closes_cost_their_cents_not_their_digits() {
    let c = common::parse_sample(samples::STOCKS_IBM_ADJ_CLOSE, false);
    let (_, layout) = encode_column(&c).unwrap();
    assert_eq!(layout.floats.map(|f| f.encoding), Some(FloatEncoding::Mult));
    let b = bits_per_value(&c);
    // As 12-decimal digits they took 44 bits a value; the cents move by up to a few dollars
    // a day (about 10 bits) and the rounding to 12 decimals leaves about 7 bits.
    assert!(b < 26.0, "{b} bits per adjusted close");
}

/// A clock with a few missed readings: the deltas are one value but at the gaps, which the
/// Sparse int section lists by position, where packed blocks would widen to the gap's size.
#[test]
fn clock_gaps_cost_their_positions_not_a_wide_block() {
    let c = common::parse_sample(samples::GLUCOSE_TS, true);
    let (body, layout) = encode_column(&c).unwrap();
    assert_eq!(
        layout.ints.map(|i| (i.encoding, i.order)),
        Some((tscoll_codec::IntEncoding::Sparse, 1))
    );
    // 256 readings, two gaps: a 3-byte column header, the first time (6 bytes), the divisor
    // (1 minute), the common delta (5), the count, two widths, then two gaps of 8 + 8 bits.
    let b = bits_per_value(&c);
    assert!(body.len() <= 24, "{} bytes", body.len());
    assert!(b < 0.8, "{b} bits per timestamp");
}
