# Draws F1's plot from the data file bench/report.py writes (issue 37).
#   gnuplot -e "dir='bench/results'" bench/family.gp
# reads  dir/family.dat: one line per kind: index, "run", ops/s, wait p50, wait p99, handoff p50 (ms)
# writes dir/family.png: ops/s per kind, and the wait percentiles per kind (log scale)
if (!exists("dir")) dir = "bench/results"
file = dir . "/family.dat"
set terminal pngcairo size 1100,520 enhanced font "DejaVu Sans,11"
set output dir . "/family.png"
set multiplot layout 1,2 title "F1: the lock family, 5 processes holding 50 ms (same run)"
set grid ytics lc rgb "#dddddd"
set style fill solid 0.8 border -1
set boxwidth 0.6
set xtics rotate by -30 left
set xrange [-0.6:6.6]
set key off
set title "acquisitions per second"
set ylabel "ops/s"
set yrange [0:*]
plot file using 1:3:xtic(2) with boxes lc rgb "#1b9e77"
set title "wait for the lock (ms, log scale)"
set ylabel "ms"
set logscale y 10
set yrange [0.01:*]
set key top left box opaque
plot file using ($1 - 0.15):($4 > 0 ? $4 : 0.01):xtic(2) with points pt 7 ps 1.4 lc rgb "#d95f02" title "wait p50", \
     file using ($1 + 0.15):($5 > 0 ? $5 : 0.01) with points pt 9 ps 1.4 lc rgb "#7570b3" title "wait p99", \
     file using 1:($6 > 0 ? $6 : 0.01) with points pt 5 ps 1.2 lc rgb "#333333" title "handoff p50"
unset multiplot
