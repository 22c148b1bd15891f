use super::erf;

#[test]
fn erf_is_within_a_millionth_of_the_exact_one() {
    for i in -8_000..=8_000 {
        let x = i as f32 / 1_000.0;
        let exact = candle_core::cpu::erf::erf_f32(x);
        assert!(
            (erf(x) - exact).abs() < 1e-6,
            "erf({x}) = {} not {exact}",
            erf(x)
        );
    }
    // Beyond ±4 it is ±1 to f32's precision, as far out as there are numbers.
    assert!((erf(f32::INFINITY) - 1.0).abs() < 1e-6);
    assert!((erf(f32::NEG_INFINITY) + 1.0).abs() < 1e-6);
}
