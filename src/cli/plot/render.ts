// vega-lite spec -> vega -> SVG, headless (no browser, no canvas); SVG -> PNG with resvg. The
// three libraries are optional peers of rvma (about 30 MB for plots only): loaded on first use.
import type { TopLevelSpec } from 'vega-lite';

export const PLOT_PACKAGES = ['vega', 'vega-lite', '@resvg/resvg-js'];

interface Libraries {
  vega: typeof import('vega');
  vegaLite: typeof import('vega-lite');
  resvg: typeof import('@resvg/resvg-js');
}
let libraries: Libraries | undefined;

/** Plots cannot be drawn here: the optional plotting packages are not installed. */
export class PlotUnavailable extends Error {
  constructor(cause: unknown) {
    super(`plots need the optional packages ${PLOT_PACKAGES.join(', ')}: npm install ${PLOT_PACKAGES.join(' ')} (${(cause as Error).message.split('\n')[0]})`, { cause });
    this.name = 'PlotUnavailable';
  }
}

/** Loads the plotting packages, or throws PlotUnavailable. */
export async function plotLibraries(): Promise<Libraries> {
  if (libraries) return libraries;
  try {
    const [vega, vegaLite, resvg] = await Promise.all([import('vega'), import('vega-lite'), import('@resvg/resvg-js')]);
    libraries = { vega, vegaLite, resvg };
  } catch (cause) {
    throw new PlotUnavailable(cause);
  }
  return libraries;
}

export async function toSvg(spec: TopLevelSpec): Promise<string> {
  const { vega, vegaLite } = await plotLibraries();
  const view = new vega.View(vega.parse(vegaLite.compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** At twice the SVG's size, for screens that have the pixels. */
export async function toPng(svg: string): Promise<Buffer> {
  const { resvg } = await plotLibraries();
  return new resvg.Resvg(svg, { fitTo: { mode: 'zoom', value: 2 } }).render().asPng();
}
