// Cartesian and BoxList domains of dimension 4 (see structured.hpp).
#include "structured.hpp"

namespace halox::python {
template std::shared_ptr<const domain_ops> cartesian_ops<4>(const boost::mpi::communicator&,
                                                            const std::vector<index>&,
                                                            const std::vector<bool>&,
                                                            const std::vector<int>&);
template std::shared_ptr<const domain_ops> box_list_ops<4>(const boost::mpi::communicator&,
                                                           const std::vector<index>&,
                                                           const std::vector<bool>&,
                                                           const std::vector<py_box>&,
                                                           const std::vector<int>&);
}  // namespace halox::python
