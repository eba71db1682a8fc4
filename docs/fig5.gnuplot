# Regenerate: cargo run --release -p krait-bench -- check --csv fig5.csv, then
#   grep chengRW fig5.csv | awk -F, '{print $4","$9}' | sort -t, -n -u -k1,1 > fig5.dat && gnuplot docs/fig5.gnuplot
set terminal pngcairo size 800,500 font "Helvetica,11"
set output "docs/fig5.png"
set datafile separator ","
set title "One-shot verification time, BlindW-RW (the paper's Figure 5), 2-core machine"
set xlabel "transactions"
set ylabel "seconds (log scale)"
set logscale y
set yrange [0.001:200]
set key top left
set grid
plot "fig5.dat" using 1:($2/1000) with linespoints lw 2 pt 7 title "krait (full pipeline)", \
     "-" using 1:2 with points pt 5 ps 1.5 title "Cobra on the same machine (data README)"
9564,35.6
15263,73.7
e
