import { escapeXml, px } from './format.js';

/** A part of a figure (a panel, a legend), laid out from its own top-left corner. */
export interface Block {
  width: number;
  height: number;
  body: string;
}

/**
 * Blocks one under the other as one <svg>. It has a viewBox and no fixed size: the figure
 * scales down with the page and is never wider than it was laid out for.
 */
export function figure(blocks: readonly Block[], label: string): string {
  const width = Math.ceil(Math.max(...blocks.map((b) => b.width)));
  let y = 0;
  const parts = blocks.map((b) => {
    const part = `<g transform="translate(0,${px(y)})">${b.body}</g>`;
    y += b.height;
    return part;
  });
  const height = Math.ceil(y);
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 ${width} ${height}" ` +
    `style="width:100%;max-width:${width}px;height:auto" role="img" aria-label="${escapeXml(label)}">` +
    `${parts.join('')}</svg>`
  );
}
