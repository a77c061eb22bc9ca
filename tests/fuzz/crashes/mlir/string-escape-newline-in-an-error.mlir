// rows: = x(a + b)
m= affine_set<(d0, d1) : (d0 >= 0, -d0 +   " g*uts(^\n0p(^\n0p " g*utsn07 memref<64b[