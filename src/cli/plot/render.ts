// vega-lite spec -> vega -> SVG, headless (no browser, no canvas); SVG -> PNG with resvg.
import { Resvg } from '@resvg/resvg-js';
import { parse, View } from 'vega';
import { compile, TopLevelSpec } from 'vega-lite';

export async function toSvg(spec: TopLevelSpec): Promise<string> {
  const view = new View(parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** At twice the SVG's size, for screens that have the pixels. */
export function toPng(svg: string): Buffer {
  return new Resvg(svg, { fitTo: { mode: 'zoom', value: 2 } }).render().asPng();
}
