use art_kernels::ops::{erf, exp};

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

#[test]
fn exp_is_within_two_ten_millionths_of_the_exact_one() {
    for i in -87_000..=88_000 {
        let x = i as f32 / 1_000.0;
        let exact = (x as f64).exp();
        let relative = ((exp(x) as f64 - exact) / exact).abs();
        assert!(relative < 2e-7, "exp({x}) = {} not {exact}", exp(x));
    }
    assert_eq!(exp(0.0), 1.0);
    // Far below, nothing; never NaN or infinite.
    assert!(exp(-1e30) < 1e-37 && exp(f32::NEG_INFINITY) < 1e-37);
    assert!(exp(1e30).is_finite());
}

#[test]
fn softmax_gives_candles_softmax() {
    use candle_core::{Device, Tensor};
    // Rows of several widths, with scores as attention makes them (and a row of equals).
    for width in [1, 7, 16, 33, 256] {
        let values: Vec<f32> = (0..3 * width)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 4.0)
            .chain(std::iter::repeat_n(2.5, width))
            .collect();
        let mut ours = values.clone();
        art_kernels::ops::softmax_rows(&mut ours, width);
        let ours = Tensor::from_vec(ours, (4, width), &Device::Cpu).unwrap();
        let tensor = Tensor::from_vec(values, (4, width), &Device::Cpu).unwrap();
        let theirs = candle_nn::ops::softmax_last_dim(&tensor).unwrap();
        let difference = (ours - theirs)
            .unwrap()
            .abs()
            .unwrap()
            .flatten_all()
            .unwrap()
            .max(0)
            .unwrap()
            .to_scalar::<f32>()
            .unwrap();
        assert!(difference < 1e-6, "width {width}: differs by {difference}");
    }
}

#[test]
fn add_norm_gives_candles_layer_norm_of_the_sum() {
    use candle_core::{Device, Tensor};
    let (rows, width) = (37, 40);
    let at = |i: usize, k: usize| ((i * k % 97) as f32 - 48.0) / 8.0;
    let tensor = |k, shape: &[usize]| {
        let count = shape.iter().product();
        Tensor::from_vec((0..count).map(|i| at(i, k)).collect(), shape, &Device::Cpu).unwrap()
    };
    let (y, residual, bias) = (
        tensor(3, &[rows, width]),
        tensor(5, &[rows, width]),
        tensor(7, &[width]),
    );
    let (weight, shift) = (tensor(11, &[width]), tensor(13, &[width]));
    let norm = art_kernels::ops::Norm {
        weight: weight.to_vec1().unwrap(),
        bias: shift.to_vec1().unwrap(),
        eps: 1e-12,
    };
    let ours = y.copy().unwrap();
    ours.inplace_op2(
        &residual,
        &super::fused::AddNorm {
            bias: &bias.to_vec1::<f32>().unwrap(),
            norm: &norm,
        },
    )
    .unwrap();
    let sum = ((y + residual).unwrap().broadcast_add(&bias)).unwrap();
    let theirs = candle_nn::ops::layer_norm(&sum, &weight, &shift, 1e-12).unwrap();
    let difference = (ours - theirs)
        .unwrap()
        .abs()
        .unwrap()
        .flatten_all()
        .unwrap()
        .max(0)
        .unwrap()
        .to_scalar::<f32>()
        .unwrap();
    assert!(difference < 1e-4, "differs by {difference}");
}

#[test]
fn attention_gives_the_plain_formula_for_texts_of_any_length() {
    use art_kernels::attention::{HEAD, attend};
    let (heads, hidden) = (2, 2 * HEAD);
    for len in [1, 3, 4, 5, 17, 33, 100, 256] {
        let qkv: Vec<f32> = (0..len * 3 * hidden)
            .map(|i| ((i * 7919 % 211) as f32 - 105.0) / 60.0)
            .collect();
        let mut ours = vec![f32::NAN; len * hidden];
        attend(&qkv, &mut ours, hidden);
        let at = |row: usize, part: usize, head: usize, d: usize| {
            qkv[row * 3 * hidden + part * hidden + head * HEAD + d]
        };
        for head in 0..heads {
            for i in 0..len {
                let scores: Vec<f64> = (0..len)
                    .map(|j| {
                        (0..HEAD)
                            .map(|d| f64::from(at(i, 0, head, d) * at(j, 1, head, d)))
                            .sum()
                    })
                    .collect();
                let largest = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let weights: Vec<f64> = scores.iter().map(|s| (s - largest).exp()).collect();
                let total: f64 = weights.iter().sum();
                for d in 0..HEAD {
                    let exact: f64 = (0..len)
                        .map(|j| weights[j] / total * f64::from(at(j, 2, head, d)))
                        .sum();
                    let got = ours[i * hidden + head * HEAD + d];
                    assert!(
                        (f64::from(got) - exact).abs() < 1e-5,
                        "len {len}, head {head}, row {i}, {d}: {got} not {exact}"
                    );
                }
            }
        }
    }
}
