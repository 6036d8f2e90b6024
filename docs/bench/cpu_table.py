"""Markdown table of halo_bench CPU rows run three times with HALOX_SHM_INTO=field and =buffer
(rows carrying "run" and "shm_into", as .device/visit5.sh writes them): per case the median over
the runs of halox (each way), mpi_manual and mpi_types, and of halox over the faster hand-written
variant in the same run. Usage: python3 docs/bench/cpu_table.py RUN.jsonl ..."""
import sys,json,statistics as st
def fmt(x): return f'{x:.0f}' if x>=100 else f'{x:.3g}'
def load(f): return [json.loads(l) for l in open(f) if l.startswith('{')]
def cpu_table(f):
  rows=load(f)
  cases=[]
  for r in rows:
    if 'local' in r and (r['local'],r['width']) not in cases: cases.append((r['local'],r['width']))
  out=["| case | halox, `field` µs | halox, `buffer` µs | mpi_manual µs | mpi_types µs | `field` / faster hand-written | `buffer` / faster |","|---|---:|---:|---:|---:|---:|---:|"]
  worst=0
  for c in cases:
    def med(impl,into=None):
      v=[r['median_us'] for r in rows if (r.get('local'),r.get('width'))==c and r['impl']==impl and (into is None or r['shm_into']==into)]
      return st.median(v)
    ratios={}
    for into in ['field','buffer']:
      per=[]
      for run in sorted({r['run'] for r in rows}):
        rs=[r for r in rows if (r.get('local'),r.get('width'))==c and r['run']==run and r['shm_into']==into]
        h=[r['median_us'] for r in rs if r['impl']=='halox'][0]
        b=min(r['median_us'] for r in rs if r['impl'] in('mpi_manual','mpi_types'))
        per.append(h/b)
      ratios[into]=st.median(per)
    worst=max(worst,ratios['field'])
    ok=all(r['verified'] for r in rows if (r.get('local'),r.get('width'))==c)
    assert ok
    out.append(f"| {c[0]}³ w{c[1]} | **{fmt(med('halox','field'))}** | {fmt(med('halox','buffer'))} | {fmt(med('mpi_manual'))} | {fmt(med('mpi_types'))} | **{ratios['field']:.2f}** | {ratios['buffer']:.2f} |")
  return "\n".join(out), worst
for f in sys.argv[1:]:
  t,w=cpu_table(f); print(f); print(t); print("worst field/faster:", round(w, 3)); print()
