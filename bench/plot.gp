# Draws the benchmark plots from the data files bench/report.py writes (issue #3).
#   gnuplot -e "dir='bench/results'" bench/plot.gp
# reads  dir/handoff_latency.dat, dir/throughput.dat: one block per library, each opening with
#        a line '"<title>" <line style>' (the style number keeps a library's colour fixed), and
#        comment lines '# name=value' carrying the same-run references
# writes dir/handoff_latency.png, dir/throughput.png
if (!exists("dir")) dir = "bench/results"

# meta(file, name): the value of a '# name=value' line of file, or "" if there is none.
meta(file, name) = system("awk -F= '/^# " . name . "=/ {print $2; exit}' '" . file . "' 2>/dev/null")
# The style numbers of the blocks, in order (one word per block).
block_styles(file) = system("awk '/^\"/ {print $NF}' '" . file . "' 2>/dev/null")

set terminal pngcairo size 1000,620 enhanced font "DejaVu Sans,11"
set grid xtics ytics lc rgb "#dddddd"
set key spacing 1.2 box opaque
set style line 1 lc rgb "#1b9e77" lw 2.5 pt 7 ps 1.2
set style line 2 lc rgb "#333333" lw 2 pt 6 ps 1.2 dt 2
set style line 3 lc rgb "#d95f02" lw 2 pt 9 ps 1.2
set style line 4 lc rgb "#e6ab02" lw 2 pt 11 ps 1.2
set style line 5 lc rgb "#7570b3" lw 2 pt 13 ps 1.2
set style line 6 lc rgb "#e7298a" lw 2 pt 15 ps 1.2

# --- S3 handoff gap distribution --------------------------------------------------------------
file = dir . "/handoff_latency.dat"
set output dir . "/handoff_latency.png"
p = meta(file, "plot_p")
set title "S3 handoff: release → next acquisition by another process" . \
  (p ne "" ? ", P = " . p . " processes" : "") . " (CDF)"
set xlabel "gap from a release to the next holder's acquisition (µs, log scale)"
set ylabel "fraction of handoffs with a gap ≤ x"
set key right bottom
set logscale x 10
set format x "10^{%L}"
set yrange [0:1.02]
set ytics 0.1
ping = meta(file, "ping_p50_us")
if (ping ne "") {
  set arrow 1 from real(ping), graph 0 to real(ping), graph 1 nohead lc rgb "#555555" dt 3 lw 1.5
  set label 1 sprintf("PING p50 %.0f µs", real(ping)) at real(ping), graph 0.6 center rotate by 90 \
    offset -1.2,0 textcolor rgb "#555555" font ",9"
  set arrow 2 from 2.5 * real(ping), graph 0 to 2.5 * real(ping), graph 1 nohead lc rgb "#aaaaaa" dt 2 lw 1.5
  set label 2 "goal: p50 ≤ 2.5 × PING p50" at 2.5 * real(ping), graph 0.6 center rotate by 90 \
    offset -1.2,0 textcolor rgb "#888888" font ",9"
}
styles = block_styles(file)
blocks = words(styles)
if (blocks > 0) {
  plot for [i=0:blocks-1] file index i using 1:2 with steps ls (word(styles, i+1)+0) \
    title columnheader(1)
} else {
  unset logscale x
  set format x "%g"
  unset key
  set label 3 "no S3 data" at graph 0.5, graph 0.5 center
  plot [0:1] [0:1] NaN notitle
  unset label 3
}
unset arrow
unset label

# --- S2 throughput vs concurrency --------------------------------------------------------------
file = dir . "/throughput.dat"
set output dir . "/throughput.png"
set title "S2 throughput: lock+unlock pairs per second, C tasks each on its own key"
set xlabel "concurrency C (log scale)"
set ylabel "pairs/s (log scale)"
set key right bottom
set logscale xy 10
set format x "%g"
set format y "%g"
set yrange [*:*]
set ytics auto
set mytics 10
set offsets graph 0.05, graph 0.05, graph 0.1, 0
ev = meta(file, "evalsha_c50_rps")
if (ev ne "") {
  set arrow 1 from graph 0, first real(ev) to graph 1, first real(ev) nohead lc rgb "#555555" dt 3 lw 1.5
  set label 1 sprintf("EVALSHA acquire -c 50 -P 16: %.0f ops/s", real(ev)) at graph 0.02, first real(ev) \
    left offset 0,0.7 textcolor rgb "#555555" font ",9"
  set arrow 2 from graph 0, first 0.4 * real(ev) to graph 1, first 0.4 * real(ev) nohead \
    lc rgb "#aaaaaa" dt 2 lw 1.5
  set label 2 "goal at C = 256: ≥ 0.4 × EVALSHA" at graph 0.02, first 0.4 * real(ev) left offset 0,0.7 \
    textcolor rgb "#888888" font ",9"
}
styles = block_styles(file)
blocks = words(styles)
if (blocks > 0) {
  # The reference lines must be inside the y range.
  if (ev ne "") { set yrange [*:1.5 * real(ev)] }
  plot for [i=0:blocks-1] file index i using 1:2 with linespoints ls (word(styles, i+1)+0) \
    title columnheader(1)
} else {
  unset logscale xy
  set offsets 0, 0, 0, 0
  unset key
  set label 3 "no S2 data" at graph 0.5, graph 0.5 center
  plot [0:1] [0:1] NaN notitle
}
