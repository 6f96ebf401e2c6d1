//! The roofline chart: each measured plan's % of the device's copy
//! bandwidth against its input's size, one colour per plan, with the
//! goals' 30% and 50% lines.

use plotters::prelude::*;

/// One point: input MiB, % of the roofline, and the plan that ran.
pub struct Point<'a> {
    pub mib: f64,
    pub pct: f64,
    pub plan: &'a str,
}

const PLANS: [(&str, RGBColor); 4] = [("batch", BLUE), ("split", RED), ("multipass", GREEN), ("split-multipass", MAGENTA)];

/// Write the chart of `points` as SVG to `path`, titled with the device.
pub fn write_svg(path: &std::path::Path, device: &str, points: &[Point]) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let max_mib = points.iter().map(|p| p.mib).fold(1.0, f64::max) * 2.0;
    let min_mib = points.iter().map(|p| p.mib).fold(max_mib, f64::min).max(1e-4) / 2.0;
    let max_pct = points.iter().map(|p| p.pct).fold(100.0, f64::max);
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("rlx_opt.welch_peaks on {device}: % of the copy bandwidth"), ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(56)
        .build_cartesian_2d((min_mib..max_mib).log_scale(), 0.0..max_pct)?;
    chart.configure_mesh().x_desc("input (MiB, log scale)").y_desc("% of device-to-device copy bandwidth").draw()?;
    for (goal, label) in [(50.0, "goal: 50% (batch 8192 × 8 × 256)"), (30.0, "goal: 30% (cells ≥ 16 MiB)")] {
        chart.draw_series(LineSeries::new([(min_mib, goal), (max_mib, goal)], BLACK.mix(0.4)))?.label(label).legend(|(x, y)| PathElement::new([(x, y), (x + 16, y)], BLACK.mix(0.4)));
    }
    for (plan, colour) in PLANS {
        let mine: Vec<(f64, f64)> = points.iter().filter(|p| p.plan == plan).map(|p| (p.mib, p.pct)).collect();
        if mine.is_empty() {
            continue;
        }
        chart.draw_series(mine.into_iter().map(|xy| Circle::new(xy, 4, colour.filled())))?.label(plan).legend(move |(x, y)| Circle::new((x + 8, y), 4, colour.filled()));
    }
    chart.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.8)).position(SeriesLabelPosition::UpperLeft).draw()?;
    root.present()?;
    Ok(())
}
