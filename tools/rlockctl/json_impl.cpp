// Boost.JSON, header-only: its sources are compiled here, once, so rlockctl needs nothing but
// the headers of libboost1.81-dev (the compiled library is another Debian package,
// libboost-json1.81-dev, and would be one more runtime dependency of the installed tool).
#include <boost/json/src.hpp>
