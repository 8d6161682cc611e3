# SPDX-License-Identifier: Apache-2.0
# Plots build/compare/scaling.dat (scripts/bench_table.py scaling --dat): ns per operation
# against the pending count, log-log. Usage: gnuplot -e "dat='...'; out='...svg'" scaling.gp
set terminal svg size 800,480 dynamic font "sans,12"
set output out
set termoption noenhanced
set logscale xy
set xrange [*:*] noextend
set xlabel "pending timeouts N"
set ylabel "ns per operation (calling thread); worker us per tick"
set key top left
set grid
set title "schedule, cancel and worker tick cost against pending count"
plot for [i=2:*] dat using 1:i with linespoints title columnhead(i)
