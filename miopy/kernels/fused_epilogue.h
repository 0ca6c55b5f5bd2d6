/* Filled in by the fusion work: bias, batch-norm inference and activation applied before the store. */
#define MIOPY_EPILOGUE_PARAMS
#define MIOPY_EPILOGUE(v, k, pq) (v)
