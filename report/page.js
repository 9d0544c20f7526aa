// Draws the report's panels from REPORT with uPlot: hover shows values in
// the legend, a drag zooms, a double-click resets.
"use strict";
(function () {
  const palette = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"];
  const dashes = [[], [6, 3], [2, 2], [8, 3, 2, 3]];
  window.reportCharts = {};

  function fmt(v, unit) {
    if (v == null || isNaN(v)) return "–";
    const a = Math.abs(v);
    let s;
    if (unit === "bytes") {
      const u = ["B", "KiB", "MiB", "GiB", "TiB"];
      let i = 0;
      while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
      return v.toPrecision(4) + " " + u[i];
    }
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) s = v.toExponential(3);
    else s = (+v.toPrecision(4)).toString();
    return s;
  }

  function chart(el, c) {
    const width = Math.max(300, (el.clientWidth || 580) - 4);
    const series = [{}];
    const data = [REPORT.x];
    c.series.forEach((s, i) => {
      series.push({
        label: s.name,
        stroke: palette[i % palette.length],
        dash: REPORT.compare ? dashes[s.job % dashes.length] : undefined,
        width: 1.5,
        spanGaps: false,
        value: (u, v) => fmt(v, c.unit),
      });
      data.push(s.values);
    });
    const opts = {
      width: width,
      height: 220,
      scales: { x: { time: !REPORT.compare } },
      // Times in UTC, as the page's time span says them.
      tzDate: ts => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
      axes: [
        { values: REPORT.compare ? (u, vals) => vals.map(v => v + "s") : undefined },
        { size: 60, values: (u, vals) => vals.map(v => fmt(v, c.unit)) },
      ],
      legend: { live: true },
      cursor: { drag: { x: true, y: false } },
      series: series,
    };
    const u = new uPlot(opts, data, el);
    window.reportCharts[c.id] = u;
    return u;
  }

  const byId = {};
  REPORT.panels.forEach(p => { byId[p.id] = p; });
  document.querySelectorAll("[data-panel]").forEach(el => {
    const p = byId[el.dataset.panel];
    if (p && p.series.length) chart(el.querySelector(".chart"), p);
  });

  const list = document.getElementById("other");
  const holder = document.getElementById("other-charts");
  REPORT.other.forEach(m => {
    const li = document.createElement("li");
    li.textContent = m.id + " (" + m.unit + (m.series.length ? ", " + m.series.length + " series" : ", no values to chart") + ")";
    if (m.help) li.title = m.help;
    li.dataset.metric = m.id;
    li.addEventListener("click", () => {
      if (window.reportCharts[m.id]) {
        document.getElementById("metric-" + m.id).scrollIntoView();
        return;
      }
      const div = document.createElement("div");
      div.className = "panel";
      div.id = "metric-" + m.id;
      div.dataset.metric = m.id;
      const h = document.createElement("h3");
      h.textContent = m.id;
      const q = document.createElement("div");
      q.className = "q";
      q.textContent = m.query;
      const c = document.createElement("div");
      div.append(h, q, c);
      holder.append(div);
      if (m.series.length) chart(c, m);
      else c.textContent = "No values in the job's time span.";
    });
    list.append(li);
  });
})();
