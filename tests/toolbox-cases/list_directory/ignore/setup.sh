touch x.log abc keep.txt
