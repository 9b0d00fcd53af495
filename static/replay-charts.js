// kss replay charts: draws a replay run's time series (or several runs overlaid) with uPlot.
//
// Entry point (needs uPlot, static/vendor/uplot/<version>/uPlot.iife.min.js, and its uPlot.min.css):
//
//   kssReplayCharts.render(element, data) -> {charts: [uPlot...], destroy()}
//
// `data` is {runs: [run, ...]} (two or more runs are overlaid: one colour per series, one dash pattern per run) or a
// single run. A run is
//   {name: "a",
//    timeseries: rows [{t: 0, cpu_requested: 2, cpu_allocatable: 8, ...}, ...] or columns {t: [...], cpu_requested: [...]},
//    waits: [seconds, ...]            // bound pods' waits; or pods: [{wait: 12.5 | "" | null, ...}, ...]
//   }
// Column names are those of timeseries.csv (docs/replay.md): t (virtual seconds), <R>_requested / <R>_allocatable,
// pods_*, queue_*, gpu_fragmentation, gpu_fragmentation_ratio, nodes_*. Charts whose columns are missing are left out.
// Every chart is a <figure class="kss-chart" data-chart="<id>"> holding a <figcaption> and uPlot's canvas.
(function (global) {
  "use strict";

  var PALETTE = ["#2f6fdf", "#d9480f", "#2b8a3e", "#7048e8", "#c2255c", "#0b7285", "#e67700", "#495057",
    "#5c940d", "#862e9c", "#a61e4d", "#1864ab"];
  var DASHES = [[], [8, 4], [2, 3], [12, 3, 2, 3]];
  // Tick steps of the time axis, in seconds: whole minutes, hours and days rather than uPlot's decimal steps.
  var TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
    172800, 432000, 604800, 1209600, 2592000, 7776000, 15552000, 31536000];
  // Counts of pods or nodes are whole: their axes tick at whole numbers only (never 0.2, 0.4, ...).
  var COUNT_STEPS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10000, 20000, 25000, 50000,
    100000, 200000, 250000, 500000, 1000000];
  var WAIT_TICKS = [1, 10, 60, 600, 3600, 21600, 86400, 604800, 2592000];
  var FIRST_RESOURCES = ["cpu", "memory", "gpu", "pods", "ephemeral-storage"];

  function columns(timeseries) {
    if (!timeseries) return {};
    if (!Array.isArray(timeseries)) return timeseries;
    var out = {};
    timeseries.forEach(function (row) {
      Object.keys(row).forEach(function (key) {
        if (!out[key]) out[key] = [];
      });
    });
    Object.keys(out).forEach(function (key) {
      out[key] = timeseries.map(function (row) {
        var v = row[key];
        if (v === "" || v === null || v === undefined) return null;
        return typeof v === "number" ? v : Number(v);
      });
    });
    return out;
  }

  function waitsOf(run) {
    if (Array.isArray(run.waits)) return run.waits.slice();
    var out = [];
    (run.pods || []).forEach(function (pod) {
      var w = pod.wait;
      if (w !== "" && w !== null && w !== undefined && !isNaN(Number(w))) out.push(Number(w));
    });
    return out;
  }

  function normalise(data) {
    var runs = data && Array.isArray(data.runs) ? data.runs : [data || {}];
    return runs.map(function (run, i) {
      return {name: run.name || "run " + (i + 1), cols: columns(run.timeseries), waits: waitsOf(run)};
    });
  }

  // --- formatting ---------------------------------------------------------------------------------------------
  function pad(n) {
    return n < 10 ? "0" + n : "" + n;
  }

  // Virtual seconds as a clock reading: "day 3 04:00" over long runs, "04:10" or "95 s" over short ones.
  function virtualTime(seconds, span) {
    if (seconds === null || seconds === undefined) return "";
    var s = Math.round(seconds);
    if (span < 600) return s + " s";
    var day = Math.floor(s / 86400), rest = s - day * 86400;
    var clock = pad(Math.floor(rest / 3600)) + ":" + pad(Math.floor((rest % 3600) / 60));
    if (span >= 2 * 86400 && rest === 0) return "day " + day;
    return span >= 2 * 86400 || day > 0 ? "day " + day + " " + clock : clock;
  }

  function duration(seconds) {
    if (seconds === null || seconds === undefined) return "";  // uPlot leaves some log-axis ticks unlabelled
    if (seconds < 60) return +seconds.toPrecision(3) + " s";
    if (seconds < 3600) return +(seconds / 60).toPrecision(3) + " min";
    if (seconds < 86400) return +(seconds / 3600).toPrecision(3) + " h";
    return +(seconds / 86400).toPrecision(3) + " d";
  }

  function number(v) {
    if (v === null || v === undefined || isNaN(v)) return "–";
    if (Math.abs(v) >= 1e9) return +(v / 1e9).toPrecision(3) + "G";
    if (Math.abs(v) >= 1e6) return +(v / 1e6).toPrecision(3) + "M";
    if (Math.abs(v) >= 1e4) return +(v / 1e3).toPrecision(3) + "k";
    return +v.toFixed(2) + "";  // two decimals at most, as kss_sim/figures.py's number() writes them
  }

  // --- what to draw -------------------------------------------------------------------------------------------
  function resourcesOf(cols) {
    var names = [];
    Object.keys(cols).forEach(function (key) {
      var m = /^(.*)_allocatable$/.exec(key);
      if (!m || !cols[m[1] + "_requested"]) return;
      var any = cols[key].some(function (v) {
        return v > 0;
      });
      if (any) names.push(m[1]);
    });
    // `gpu` already counts every */gpu extended resource: do not draw them twice.
    if (names.indexOf("gpu") >= 0) {
      names = names.filter(function (n) {
        return n === "gpu" || !/\/gpu$/.test(n);
      });
    }
    names.sort(function (a, b) {
      var ia = FIRST_RESOURCES.indexOf(a), ib = FIRST_RESOURCES.indexOf(b);
      if (ia < 0) ia = 99;
      if (ib < 0) ib = 99;
      return ia - ib || (a < b ? -1 : a > b ? 1 : 0);
    });
    return names;
  }

  function percentOf(cols, resource) {
    var req = cols[resource + "_requested"], alloc = cols[resource + "_allocatable"];
    return req.map(function (v, i) {
      return alloc[i] > 0 && v !== null ? (100 * v) / alloc[i] : null;
    });
  }

  function plain(keys, labels) {
    return keys.map(function (key, i) {
      return {label: labels[i], values: function (cols) {
        return cols[key];
      }};
    });
  }

  function chartSpecs(runs) {
    var resources = [];
    runs.forEach(function (run) {
      resourcesOf(run.cols).forEach(function (r) {
        if (resources.indexOf(r) < 0) resources.push(r);
      });
    });
    return [
      {id: "allocation", title: "Allocation (requested / allocatable, %)", unit: "%",
        lines: resources.map(function (r) {
          return {label: r, values: function (cols) {
            return cols[r + "_allocatable"] ? percentOf(cols, r) : null;
          }};
        })},
      {id: "pods", title: "Pods", unit: "pods", counts: true,
        lines: plain(["pods_pending", "pods_running", "pods_unschedulable"], ["pending", "running", "unschedulable"])},
      {id: "queue", title: "Scheduling queue (pods)", unit: "pods", counts: true,
        lines: plain(["queue_active", "queue_backoff", "queue_unschedulable", "queue_gated"],
          ["activeQ", "backoffQ", "unschedulablePods", "gated"])},
      {id: "fragmentation", title: "GPU fragmentation (FGD, GPUs)", unit: "GPUs",
        lines: [
          {label: "fragmented GPUs", values: function (cols) {
            return cols.gpu_fragmentation;
          }},
          {label: "free GPUs", values: function (cols) {
            if (!cols.gpu_allocatable || !cols.gpu_requested) return null;
            return cols.gpu_allocatable.map(function (v, i) {
              return v === null ? null : v - cols.gpu_requested[i];
            });
          }},
        ]},
      {id: "nodes", title: "Nodes", unit: "nodes", counts: true,
        lines: plain(["nodes_empty", "nodes_partial", "nodes_full"], ["empty", "partly used", "full"])},
    ];
  }

  // --- drawing ------------------------------------------------------------------------------------------------
  function figure(element, id, title) {
    var fig = document.createElement("figure");
    fig.className = "kss-chart";
    fig.setAttribute("data-chart", id);
    fig.style.margin = "0 0 1.5rem 0";
    var caption = document.createElement("figcaption");
    caption.textContent = title;
    caption.style.fontWeight = "600";
    caption.style.margin = "0 0 0.25rem 0";
    fig.appendChild(caption);
    element.appendChild(fig);
    return fig;
  }

  function widthOf(element) {
    return Math.max(320, Math.min(element.clientWidth || 900, 1400) - 8);
  }

  // One x axis for every run: the union of their sample times (a run missing a time gets a gap there).
  function aligned(runs) {
    var seen = {}, xs = [];
    runs.forEach(function (run) {
      (run.cols.t || []).forEach(function (t) {
        if (!seen[t]) {
          seen[t] = true;
          xs.push(t);
        }
      });
    });
    xs.sort(function (a, b) {
      return a - b;
    });
    var index = {};
    xs.forEach(function (t, i) {
      index[t] = i;
    });
    return {xs: xs, place: function (run, values) {
      var out = new Array(xs.length).fill(null);
      (run.cols.t || []).forEach(function (t, i) {
        out[index[t]] = values[i] === undefined ? null : values[i];
      });
      return out;
    }};
  }

  // From 0 to at least 1, so a run whose queue never holds a pod still has whole-number ticks.
  function countRange(u, min, max) {
    return [0, Math.max(1, Math.ceil(max === null ? 0 : max))];
  }

  function timeChart(element, runs, spec, axis) {
    var data = [axis.xs], series = [{label: "time", value: function (u, v) {
      return virtualTime(v, span);
    }}];
    var span = axis.xs.length ? axis.xs[axis.xs.length - 1] - axis.xs[0] : 0;
    spec.lines.forEach(function (line, li) {
      runs.forEach(function (run, ri) {
        var values = line.values(run.cols);
        if (!values) return;
        data.push(axis.place(run, values));
        series.push({
          label: runs.length > 1 ? line.label + " · " + run.name : line.label,
          stroke: PALETTE[li % PALETTE.length],
          dash: DASHES[ri % DASHES.length],
          width: 1.5,
          points: {show: false},
          value: function (u, v) {
            return spec.unit === "%" ? (v === null ? "–" : v.toFixed(1) + " %") : number(v);
          },
        });
      });
    });
    if (data.length < 2 || axis.xs.length === 0) return null;
    var fig = figure(element, spec.id, spec.title);
    var yAxis = {size: 60, values: function (u, ticks) {
      return ticks.map(function (v) {
        return spec.unit === "%" ? v + " %" : number(v);
      });
    }};
    if (spec.counts) yAxis.incrs = COUNT_STEPS;
    var opts = {
      width: widthOf(element),
      height: 240,
      series: series,
      scales: {x: {time: false}, y: spec.unit === "%" ? {range: [0, 100]} : spec.counts ? {range: countRange} : {}},
      axes: [
        {space: 90, incrs: TIME_STEPS, values: function (u, ticks) {
          return ticks.map(function (v) {
            return virtualTime(v, span);
          });
        }},
        yAxis,
      ],
      legend: {live: true},
      cursor: {drag: {x: true, y: false}},
    };
    return new global.uPlot(opts, data, fig);
  }

  // The share of bound pods that waited at most x seconds, on a log axis; waits under 1 s are drawn at 1 s.
  function waitChart(element, runs) {
    var withWaits = runs.filter(function (run) {
      return run.waits.length > 0;
    });
    if (!withWaits.length) return null;
    var points = {};
    withWaits.forEach(function (run) {
      run.waits.forEach(function (w) {
        points[Math.max(1, w)] = true;
      });
    });
    var xs = Object.keys(points).map(Number).sort(function (a, b) {
      return a - b;
    });
    if (xs.length > 600) {  // keep the chart light: 600 quantiles of the union are enough to draw the curve
      var step = xs.length / 600, fewer = [];
      for (var i = 0; i < 600; i++) fewer.push(xs[Math.floor(i * step)]);
      fewer.push(xs[xs.length - 1]);
      xs = fewer;
    }
    if (xs.length === 1) xs.push(xs[0] * 10);
    var data = [xs], series = [{label: "wait", value: function (u, v) {
      return v === null ? "" : "≤ " + duration(v);
    }}];
    withWaits.forEach(function (run, ri) {
      var sorted = run.waits.map(function (w) {
        return Math.max(1, w);
      }).sort(function (a, b) {
        return a - b;
      });
      var j = 0;
      data.push(xs.map(function (x) {
        while (j < sorted.length && sorted[j] <= x) j++;
        return (100 * j) / sorted.length;
      }));
      series.push({
        label: withWaits.length > 1 ? "bound pods · " + run.name : "bound pods",
        stroke: PALETTE[ri % PALETTE.length],
        dash: DASHES[ri % DASHES.length],
        width: 1.5,
        points: {show: false},
        paths: global.uPlot.paths && global.uPlot.paths.stepped ? global.uPlot.paths.stepped({align: 1}) : undefined,
        value: function (u, v) {
          return v === null ? "–" : v.toFixed(1) + " %";
        },
      });
    });
    var fig = figure(element, "waits", "Wait from arrival to binding (share of bound pods that waited at most that long, %)");
    return new global.uPlot({
      width: widthOf(element),
      height: 240,
      series: series,
      scales: {x: {time: false, distr: 3, log: 10}, y: {range: [0, 100]}},
      axes: [
        {
          splits: function (u, axisIdx, min, max) {
            return WAIT_TICKS.filter(function (v) {
              return v >= min && v <= max;
            });
          },
          filter: function (u, splits) {
            return splits;  // the log scale's default filter would label powers of 10 only
          },
          values: function (u, ticks) {
            return ticks.map(function (v) {
              return duration(v);
            });
          },
        },
        {size: 60, values: function (u, ticks) {
          return ticks.map(function (v) {
            return v + " %";
          });
        }},
      ],
      legend: {live: true},
    }, data, fig);
  }

  function render(element, data) {
    if (!global.uPlot) throw new Error("kssReplayCharts: uPlot is not loaded");
    var runs = normalise(data);
    var axis = aligned(runs);
    var charts = [];
    chartSpecs(runs).forEach(function (spec) {
      var chart = timeChart(element, runs, spec, axis);
      if (chart) charts.push(chart);
    });
    var waits = waitChart(element, runs);
    if (waits) charts.push(waits);
    var onResize = function () {
      charts.forEach(function (chart) {
        chart.setSize({width: widthOf(element), height: 240});
      });
    };
    global.addEventListener("resize", onResize);
    return {
      charts: charts,
      destroy: function () {
        global.removeEventListener("resize", onResize);
        charts.forEach(function (chart) {
          var fig = chart.root.parentNode;
          chart.destroy();
          if (fig && fig.parentNode) fig.parentNode.removeChild(fig);
        });
      },
    };
  }

  global.kssReplayCharts = {render: render, virtualTime: virtualTime, duration: duration};
})(window);
