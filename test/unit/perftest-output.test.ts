// bench:rdma reads perftest's result tables by heading; these are perftest 6.06's own outputs.
import { parseResultTable } from '../../bench/rdma/perftest-output';

const BW = `
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF\t\tDevice         : rxe0
 TX depth        : 4
---------------------------------------------------------------------------------------
 #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]
 65536      200              25.37              22.95  \t\t   0.000367
---------------------------------------------------------------------------------------
`;

const LAT = `
---------------------------------------------------------------------------------------
                    RDMA_Write Latency Test
---------------------------------------------------------------------------------------
 #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] 
 8       200          15.46          19954.13      18.29    \t       471.76      \t1900.13\t\t15972.95 \t\t19954.13
---------------------------------------------------------------------------------------
`;

describe('perftest result tables', () => {
  test('ib_write_bw: columns by heading', () => {
    expect(parseResultTable(BW, ['BW average[MB/sec]'])).toEqual({
      '#bytes': 65536,
      '#iterations': 200,
      'BW peak[MB/sec]': 25.37,
      'BW average[MB/sec]': 22.95,
      'MsgRate[Mpps]': 0.000367,
    });
  });

  test('ib_write_lat: headings with spaces and percent signs', () => {
    const row = parseResultTable(LAT, ['t_typical[usec]', '99% percentile[usec]']);
    expect(row['t_typical[usec]']).toBe(18.29);
    expect(row['99% percentile[usec]']).toBe(15972.95);
    expect(row['99.9% percentile[usec]']).toBe(19954.13);
    expect(Object.keys(row)).toHaveLength(9);
  });

  test('a missing column (another unit), no table or a short row fail loudly', () => {
    const gbits = BW.replace(/MB\/sec/g, 'Gb/sec');
    expect(() => parseResultTable(gbits, ['BW average[MB/sec]'])).toThrow(/no column BW average\[MB\/sec\]/);
    expect(() => parseResultTable('Couldn\'t connect to 10.77.0.1:18515', [])).toThrow(/0 result tables/);
    expect(() => parseResultTable(BW.replace('0.000367', ''), [])).toThrow(/5 headings but 4 values/);
    expect(() => parseResultTable(BW + BW, [])).toThrow(/2 result tables/);
    expect(() => parseResultTable(BW.replace('22.95', 'n/a'), [])).toThrow(/not a number/);
  });
});
